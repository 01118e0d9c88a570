"""Exact token counts of a dataset under a base model's tokenizer, cached per file and model.

What the trainer bills as trained tokens is TRL's count of real (non-padding) tokens: the
chat-templated tokens of each training row, truncated to ``max_seq_length``, times epochs.
This module computes the per-row part with the same tokenizer and template, so an estimate
equals the bill. transformers is imported lazily: only estimates and quotes need it.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction

from posttrain_server.api.errors import ApiError
from posttrain_server.billing.models import TokenCount
from posttrain_server.files.models import File
from workers import env
from workers.contract import ModelRef
from workers.storage import default_storage
from workers.trainer import eval_plan
from workers.trainer.holdout import split_eval

_build_lock = threading.Lock()
# transformers' lazy module is not safe to import from two threads at once (seen under
# gunicorn threads: the second import got "cannot import name 'AutoTokenizer'").
_tokenizer_lock = threading.Lock()


def tokenizer_folder(ref: ModelRef) -> Path:
    """Where the tokenizer of the job's starting model lives on this machine.

    A fine-tuned LoRA chain uses its root base model's tokenizer (adapters never change it).
    """
    while ref.kind == "storage" and ref.base is not None:
        ref = ref.base
    if ref.kind == "builtin":
        from workers.tinymodel import build_tiny_model

        with _build_lock:
            return build_tiny_model(env.models_root() / ref.ref)
    if ref.kind == "path":
        return Path(ref.ref)
    if ref.kind == "hf":
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(ref.ref, local_files_only=True))
    # A fully fine-tuned result: its archive holds the tokenizer it was trained with.
    folder = env.var_dir() / "tokenizers" / ref.ref.replace("/", "_")
    with _build_lock:
        if not folder.is_dir():
            default_storage().download_dir(ref.ref, folder)
    return folder


def _tokenizer(folder: str) -> Any:
    with _tokenizer_lock:
        return _load_tokenizer(folder)


@lru_cache(maxsize=8)
def _load_tokenizer(folder: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def tokenizer_identity(ref: ModelRef) -> str:
    folder = tokenizer_folder(ref)
    files = sorted(p for p in folder.glob("tokenizer*") if p.is_file())
    stamp = ",".join(f"{p.name}:{p.stat().st_size}" for p in files)
    return f"{folder}|{stamp}"[:300]


def _length(tokenizer: Any, messages: list[dict[str, Any]], *, prompt: bool = False) -> int:
    # The same projection as the trainers' readers: role and content only.
    clean = [{"role": m["role"], "content": m["content"]} for m in messages]
    return len(tokenizer.apply_chat_template(clean, tokenize=True, return_dict=True,
                                             add_generation_prompt=prompt)["input_ids"])


def _row_tokens(tokenizer: Any, row: dict[str, Any]) -> int:
    """Tokens one row costs to train on, by dataset format.

    chat (SFT): the templated conversation. preference (DPO): prompt + preferred and prompt +
    non-preferred, both trained on. reinforcement: the templated prompt (the rollouts it
    generates are metered separately, as rollout tokens).
    """
    if "messages" in row and row["messages"][-1]["role"] == "assistant":
        return _length(tokenizer, row["messages"])
    if "preferred_output" in row:
        prompt = row["input"]["messages"]
        return (_length(tokenizer, prompt + row["preferred_output"])
                + _length(tokenizer, prompt + row["non_preferred_output"]))
    return _length(tokenizer, row["messages"], prompt=True)


def _eval_row_tokens(tokenizer: Any, row: dict[str, Any]) -> list[int]:
    """What scoring one held-out row reads: [scored sequences' tokens (a log-probability
    eval), prompt tokens (a generation eval), 1 if it carries a reference answer else 0].

    chat: the conversation, the prompt before the last (assistant) turn, 1. preference: prompt
    + preferred and prompt + non-preferred, the prompt, whether ``reference_answer`` is a
    string. reinforcement: 0, the prompt, 0.
    """
    if "messages" in row and row["messages"][-1]["role"] == "assistant":
        return [_length(tokenizer, row["messages"]),
                _length(tokenizer, row["messages"][:-1], prompt=True), 1]
    if "preferred_output" in row:
        return [_row_tokens(tokenizer, row), _length(tokenizer, row["input"]["messages"],
                                                     prompt=True),
                int(isinstance(row.get("reference_answer"), str))]
    return [0, _length(tokenizer, row["messages"], prompt=True), 0]


def _count_rows(file: File, folder: Path, count: Any = _row_tokens) -> list[Any]:
    tokenizer = _tokenizer(str(folder))
    lengths: list[Any] = []
    with default_storage().open(file.storage_key) as stream:
        for raw in stream:
            if raw.strip():
                lengths.append(count(tokenizer, json.loads(raw)))
    return lengths


def row_lengths(*, file: File, ref: ModelRef, purpose: str = "train") -> list[Any]:
    """Tokens per row of ``file`` under ``ref``'s tokenizer; computed once, then cached.

    ``purpose`` "train": what each row costs to train on (an int); "eval": what scoring it
    reads (``_eval_row_tokens``), cached under the tokenizer's identity + ``|eval``.
    """
    identity = tokenizer_identity(ref)
    if purpose == "eval":
        identity = f"{identity[:290]}|eval"
    cached = TokenCount.objects.filter(file=file, tokenizer=identity).first()
    if cached is not None:
        return cached.lengths
    try:
        lengths = _count_rows(file, tokenizer_folder(ref),
                              _eval_row_tokens if purpose == "eval" else _row_tokens)
    except (OSError, ValueError, KeyError) as exc:  # no tokenizer there, or no chat template
        raise ApiError(f"Cannot count the tokens of {file.id} with this model's tokenizer: "
                       f"{type(exc).__name__}: {exc}"[:500], param="model",
                       code="tokenizer_unavailable") from exc
    try:
        with transaction.atomic():  # a savepoint: a lost race must not break the caller's
            TokenCount.objects.create(file=file, tokenizer=identity, lengths=lengths)
    except IntegrityError:
        pass  # counted concurrently: the same numbers
    return lengths


def kept_lengths(*, file: File, ref: ModelRef, max_seq_length: int, eval_samples: int,
                 has_validation_file: bool, seed: int) -> list[int]:
    """Tokens of each row the trainer keeps (not held out for eval), truncated: one epoch of
    what it trains on (and bills). Reinforcement: the templated prompts."""
    lengths = row_lengths(file=file, ref=ref)
    validation = [0] if has_validation_file else []  # only its presence matters for the split
    kept, _ = split_eval(list(range(len(lengths))), validation, eval_samples, seed)
    return [min(lengths[i], max_seq_length) for i in kept]


def eval_workload(*, method: str, file: File, validation_file: File | None, ref: ModelRef,
                  eval_samples: int, seed: int, per_step: int, epochs: int,
                  max_new_tokens: int, checkpoint_every_steps: int = 0
                  ) -> eval_plan.EvalWorkload:
    """What the job's evals will read and generate (``eval_plan``'s rule), row by row.

    The held-out rows are the trainer's (``split_eval``, same seed, same order); each row
    costs, by method: supervised, its prompt + one greedy answer; dpo, both scored sequences
    (+ its prompt and one greedy answer when every held-out pair has a reference answer);
    reinforcement, its prompt + one greedy answer.
    """
    train = row_lengths(file=file, ref=ref)
    scored = eval_samples > 0  # no eval: nothing to count beyond the training rows
    validation = (row_lengths(file=validation_file, ref=ref, purpose="eval")
                  if validation_file is not None and scored else [])
    kept, held_out = split_eval(list(range(len(train))), list(range(len(validation))),
                                eval_samples, seed)
    source = (validation if validation_file is not None or not scored
              else row_lengths(file=file, ref=ref, purpose="eval"))
    info = [source[i] for i in held_out]
    if method == "dpo":
        answers = bool(info) and all(has_reference for _, _, has_reference in info)
        rows = [(sequences + (prompt if answers else 0), int(answers))
                for sequences, prompt, _ in info]
    else:
        rows = [(prompt, 1) for _, prompt, _ in info]
    return eval_plan.EvalWorkload(rows=tuple(rows), train_rows=len(kept), per_step=per_step,
                                  epochs=epochs, max_new_tokens=max_new_tokens,
                                  checkpoint_every_steps=checkpoint_every_steps)
