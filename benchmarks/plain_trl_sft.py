"""Plain-TRL baseline: the same fine-tune the platform runs, written as one ordinary script.

The platform is benchmarked against this: build/load the offline tiny model, write the
addition toy dataset, score held-out exact match, train with ``SFTTrainer``, score again,
save. Every phase is timed so platform overhead (queueing, metering, uploads) can be
compared with the bare training cost. Defaults are the measured CPU DEMO recipe.

    python -m benchmarks.plain_trl_sft --out /tmp/bench            # DEMO recipe (full SFT)
    python -m benchmarks.plain_trl_sft --out /tmp/bench --lora --train-rows 200 \\
        --batch-size 16 --lr 1e-3                                   # TEST recipe (LoRA)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.tinymodel import build_tiny_model  # noqa: E402
from workers.toytask import addition_rows, read_jsonl, write_jsonl  # noqa: E402
from workers.trainer.evaluation import exact_match  # noqa: E402


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = round(time.perf_counter() - start, 3)
        print(f"[time] {name}: {timings[name]:.2f} s", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--model-dir", type=Path, help="base model (default: OUT/base-model)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=float, default=None, help="epochs (default 4)")
    length.add_argument("--steps", type=int, default=None, help="optimizer steps (overrides)")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--full", dest="lora", action="store_false", help="full SFT (default)")
    kind.add_argument("--lora", dest="lora", action="store_true", help="LoRA r=8 all-linear")
    parser.set_defaults(lora=False)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-seed", type=int, default=0, help="seed drawing the rows")
    parser.add_argument("--train-rows", type=int, default=9000)
    parser.add_argument("--eval-rows", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--scheduler", default="cosine")
    parser.add_argument("--warmup", type=float, default=0.0, help="steps, or a ratio in [0, 1)")
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument(
        "--assistant-only-loss",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="loss on assistant tokens only (needs {%% generation %%}); off learns far faster here",
    )
    parser.add_argument("--padding-free", action="store_true")
    parser.add_argument("--lora-r", type=int, default=8)
    parser.add_argument("--lora-alpha", type=int, default=16)
    parser.add_argument("--logging-steps", type=int, default=10)
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the benchmark and return its summary (also printed as JSON)."""
    import torch
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(os.cpu_count() or 1)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    total_start = time.perf_counter()

    with _timed(timings, "build_or_load_model"):
        model_dir = build_tiny_model(args.model_dir or out / "base-model")
        set_seed(args.seed)
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)

    with _timed(timings, "data"):
        train_path = write_jsonl(
            out / "data" / "train.jsonl", addition_rows(args.train_rows, args.data_seed, "train")
        )
        val_path = write_jsonl(
            out / "data" / "validation.jsonl",
            addition_rows(args.eval_rows, args.data_seed, "validation"),
        )
        train_dataset = load_dataset("json", data_files=str(train_path), split="train")
        val_rows = read_jsonl(val_path)

    with _timed(timings, "eval_before"):
        before = exact_match(model, tokenizer, val_rows)
    print(f"[eval] exact match before: {before:.3f}", flush=True)

    peft_config = None
    if args.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=args.lora_r,
            lora_alpha=args.lora_alpha,
            lora_dropout=0.0,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    config = SFTConfig(
        output_dir=str(out / "trainer"),
        num_train_epochs=args.epochs if args.epochs is not None else 4.0,
        max_steps=args.steps if args.steps is not None else -1,
        per_device_train_batch_size=args.batch_size,
        gradient_accumulation_steps=1,
        learning_rate=args.lr,
        lr_scheduler_type=args.scheduler,
        warmup_steps=args.warmup,
        weight_decay=0.0,
        seed=args.seed,
        data_seed=args.seed,
        bf16=False,
        use_cpu=True,
        activation_checkpointing=False,  # gradient_checkpointing is deprecated in v5
        packing=False,
        padding_free=args.padding_free,
        max_length=None if args.padding_free else args.max_length,
        assistant_only_loss=args.assistant_only_loss,
        logging_steps=args.logging_steps,
        save_strategy="no",
        report_to="none",
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    with _timed(timings, "trainer_init"):
        trainer = SFTTrainer(
            model=model,
            args=config,
            train_dataset=train_dataset,
            processing_class=tokenizer,
            peft_config=peft_config,
        )
    with _timed(timings, "train"):
        result = trainer.train()

    history = trainer.state.log_history
    logged = [entry for entry in history if "num_tokens" in entry]
    num_tokens = int(logged[-1]["num_tokens"]) if logged else None
    losses = [entry["loss"] for entry in history if "loss" in entry]

    with _timed(timings, "eval_after"):
        after = exact_match(trainer.model, tokenizer, val_rows)
    print(f"[eval] exact match after: {after:.3f}", flush=True)

    with _timed(timings, "save"):
        trainer.save_model(str(out / "model"))
        tokenizer.save_pretrained(str(out / "model"))

    timings["total"] = round(time.perf_counter() - total_start, 3)
    summary = {
        "recipe": {
            "method": "lora" if args.lora else "full",
            "train_rows": args.train_rows,
            "epochs": args.epochs if args.steps is None else None,
            "steps": result.global_step,
            "batch_size": args.batch_size,
            "learning_rate": args.lr,
            "scheduler": args.scheduler,
            "warmup": args.warmup,
            "seed": args.seed,
            "assistant_only_loss": args.assistant_only_loss,
            "padding_free": args.padding_free,
            "max_length": args.max_length,
        },
        "exact_match_before": before,
        "exact_match_after": after,
        "eval_rows": len(val_rows),
        "num_tokens": num_tokens,
        "tokens_per_s": round(num_tokens / timings["train"]) if num_tokens else None,
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "train_runtime": result.metrics.get("train_runtime"),
        "log_keys": sorted({key for entry in history for key in entry}),
        "timings_s": timings,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "log_history.json").write_text(json.dumps(history, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> None:
    run(parse_args(argv))


if __name__ == "__main__":
    main()
