"""Build the built-in demo base model "posttrain-tiny" entirely offline.

The platform must be demonstrable (and testable) on a machine with no model hub, so the
demo base model is generated locally: a byte-level BPE tokenizer trained in-process on a
generated corpus, and a ~0.8M-parameter Qwen2-style causal LM with seeded random weights.
Everything is seeded so the same build yields byte-identical files, and the build is
published atomically so concurrent workers never see a half-written folder.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

MODEL_NAME = "posttrain-tiny"
# Bump whenever anything below changes what gets written: old builds are then rebuilt.
BUILD_VERSION = 1
MARKER_FILE = "posttrain-build.json"
SEED = 1234

VOCAB_SIZE = 330
PAD_TOKEN = "<|endoftext|>"  # noqa: S105 - a vocabulary token, not a secret
BOS_TOKEN = "<|im_start|>"  # noqa: S105
EOS_TOKEN = "<|im_end|>"  # noqa: S105
SPECIAL_TOKENS = [PAD_TOKEN, BOS_TOKEN, EOS_TOKEN]
# Qwen2's pre-tokenizer split (transformers/models/qwen2/tokenization_qwen2.py); \p{N} keeps
# every digit its own pre-token, so the BPE can never merge digits.
_QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# ChatML-style, with {% generation %} markers around assistant content (and its end-of-turn
# token) so TRL's ``assistant_only_loss=True`` can build the assistant mask.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' -%}"
    "{%- generation -%}"
    "{{- message['content'] + '<|im_end|>' -}}"
    "{%- endgeneration -%}"
    "{{- '\\n' -}}"
    "{%- else -%}"
    "{{- message['content'] + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- endif -%}"
)

MODEL_CONFIG = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "initializer_range": 0.02,
}

_WORDS = (
    "the a an and or of to in is it you that he she we they this for on with as are was be "
    "have not but what all were when can said there use each which do how their if will up "
    "other about out many then them these so some her would make like him into time has look "
    "two more write go see number no way could people my than first water been call who oil "
    "its now find long down day did get come made may part user assistant system plus sum "
    "answer question add total equals result model train data fine tune chat"
).split()


def _corpus(seed: int, lines: int = 4000) -> Iterator[str]:
    """Deterministic training text: chat-formatted arithmetic plus plain English words."""
    rng = random.Random(seed)
    for _ in range(lines):
        a, b = rng.randrange(100), rng.randrange(100)
        role = rng.choice(("user", "assistant", "system"))
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 12)))
        yield f"{BOS_TOKEN}{role}\n{a}+{b}={a + b}{EOS_TOKEN}\n"
        yield f"{words.capitalize()}. What is {a} plus {b}? The answer is {a + b}.\n"


def _build_tokenizer(seed: int):  # -> PreTrainedTokenizerFast (lazy import keeps CLI fast)
    """Train the byte-level BPE; digits are split one per pre-token so they never merge.

    The normalizer and pre-tokenizer are exactly Qwen2's: ``AutoTokenizer`` maps a "qwen2"
    config to ``Qwen2Tokenizer``, which rebuilds them from code and ignores tokenizer.json's.
    Matching them keeps training-time and load-time tokenization identical.
    """
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN2_PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=MODEL_CONFIG["max_position_embeddings"],
        padding_side="right",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    for digit in "0123456789":
        assert len(fast(digit * 3, add_special_tokens=False)["input_ids"]) == 3
    return fast


def _build_model(tokenizer, seed: int):  # -> Qwen2ForCausalLM
    """Seeded random init from a config: no weights exist anywhere to download."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.convert_tokens_to_ids(BOS_TOKEN),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **MODEL_CONFIG,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
        do_sample=False,
    )
    return model


def _is_complete(out_dir: Path, seed: int) -> bool:
    """A build is complete once its marker (written last) matches name, version and seed."""
    try:
        info = json.loads((out_dir / MARKER_FILE).read_text())
    except (OSError, ValueError):
        return False
    return (
        info.get("name") == MODEL_NAME
        and info.get("version") == BUILD_VERSION
        and info.get("seed") == seed
    )


@contextlib.contextmanager
def _build_lock(out_dir: Path) -> Iterator[None]:
    """Serialise builders on one host; the atomic rename still protects other cases."""
    lock_path = out_dir.parent / f".{out_dir.name}.lock"
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_build(tmp: Path, seed: int) -> None:
    tokenizer = _build_tokenizer(seed)
    model = _build_model(tokenizer, seed)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    files = sorted(p.name for p in tmp.iterdir() if p.is_file())
    marker = {
        "name": MODEL_NAME,
        "version": BUILD_VERSION,
        "seed": seed,
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "sha256": {name: _sha256(tmp / name) for name in files},
    }
    # Written last: its presence is what "complete" means.
    (tmp / MARKER_FILE).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
    # mkdtemp (and the weight writer) create private modes; the model is shared, read-only data.
    os.chmod(tmp, 0o755)  # noqa: S103 - world-readable on purpose
    for path in tmp.iterdir():
        os.chmod(path, 0o644)


def build_tiny_model(out_dir: Path, *, seed: int = SEED) -> Path:
    """Build "posttrain-tiny" into ``out_dir`` unless a complete build is already there.

    Builds into a temporary sibling and renames it into place, so readers see either no
    folder or a complete one. A stale or partial folder (no marker / other version) is
    moved aside and removed. Returns ``out_dir``.
    """
    out_dir = Path(out_dir).resolve()
    if _is_complete(out_dir, seed):
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(out_dir):
        if _is_complete(out_dir, seed):  # another process finished while we waited
            return out_dir
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.build-", dir=out_dir.parent))
        try:
            _write_build(tmp, seed)
            if out_dir.exists():
                if _is_complete(out_dir, seed):  # a builder without the lock won the race
                    return out_dir
                stale = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
                os.replace(out_dir, stale / "old")
                shutil.rmtree(stale, ignore_errors=True)
            try:
                os.replace(tmp, out_dir)
            except OSError:
                if not _is_complete(out_dir, seed):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=f"Build the offline demo model {MODEL_NAME}.")
    parser.add_argument("--out", type=Path, required=True, help="target folder")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    path = build_tiny_model(args.out, seed=args.seed)
    print(path)


if __name__ == "__main__":
    main()
