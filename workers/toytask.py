"""The toy task for demos and benchmarks: two-digit addition as chat ("12+34=" -> "46").

It is small enough to learn on a CPU in about a minute, and its answers are checkable by
exact match, so "the fine-tune worked" is a number rather than an impression. The train and
validation splits come from one fixed partition of all 10,000 (a, b) pairs, so held-out
problems are never seen in training, whatever ``seed`` each split is drawn with.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Fixed on purpose: changing it would move problems between splits.
_PARTITION_SEED = 20240601
VALIDATION_POOL_SIZE = 1000
SPLITS = ("train", "validation")


def _pool(split: str) -> list[tuple[int, int]]:
    """All pairs of the split: a fixed seeded shuffle of the 100x100 grid, cut in two."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    pairs = [(a, b) for a in range(100) for b in range(100)]
    random.Random(_PARTITION_SEED).shuffle(pairs)
    if split == "validation":
        return pairs[:VALIDATION_POOL_SIZE]
    return pairs[VALIDATION_POOL_SIZE:]


def addition_rows(count: int, seed: int, split: str) -> list[dict[str, Any]]:
    """``count`` chat rows (OpenAI fine-tuning format) drawn from ``split`` with ``seed``.

    Rows are distinct while ``count`` fits the split (9,000 train, 1,000 validation); beyond
    that the split is cycled in fresh shuffles, so larger requests still work.
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    pool = _pool(split)
    rng = random.Random(seed)
    chosen: list[tuple[int, int]] = []
    while len(chosen) < count:
        order = pool[:]
        rng.shuffle(order)
        chosen.extend(order[: count - len(chosen)])
    return [
        {
            "messages": [
                {"role": "user", "content": f"{a}+{b}="},
                {"role": "assistant", "content": str(a + b)},
            ]
        }
        for a, b in chosen
    ]


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows as JSON Lines (the upload format of the fine-tuning API)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read JSON Lines back, skipping blank lines."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write the two-digit addition toy dataset.")
    parser.add_argument("--train", type=Path, required=True, help="train JSONL path")
    parser.add_argument("--validation", type=Path, required=True, help="validation JSONL path")
    parser.add_argument("--train-count", type=int, default=9000)
    parser.add_argument("--validation-count", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write_jsonl(args.train, addition_rows(args.train_count, args.seed, "train"))
    write_jsonl(args.validation, addition_rows(args.validation_count, args.seed, "validation"))
    print(f"wrote {args.train_count} rows to {args.train}")
    print(f"wrote {args.validation_count} rows to {args.validation}")


if __name__ == "__main__":
    main()
