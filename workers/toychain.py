"""Preference (DPO) and prompt-only (reinforcement) rows for the addition toy task.

Same fixed train/validation partition as ``toytask``. Wrong answers are the mistakes a
small model makes on addition: a dropped carry, a digit off by one, swapped digits.
"""

from __future__ import annotations

import random
from typing import Any

from workers.toytask import addition_rows


def plausible_mistake(a: int, b: int, rng: random.Random) -> str:
    right = a + b
    candidates = {right + 10, right - 10, right + 1, right - 1, (a % 10 + b % 10) % 10
                  + 10 * ((a // 10 + b // 10) % 10)}
    text = str(right)
    if len(text) > 1 and text[0] != text[-1]:
        candidates.add(int(text[::-1]))
    candidates = {c for c in candidates if c >= 0 and c != right}
    return str(rng.choice(sorted(candidates)))


def _operands(row: dict[str, Any]) -> tuple[int, int]:
    a, b = row["messages"][0]["content"].rstrip("=").split("+")
    return int(a), int(b)


def preference_rows(count: int, seed: int, split: str) -> list[dict[str, Any]]:
    """OpenAI preference rows: the right sum preferred over a plausible mistake."""
    rng = random.Random(seed + 1)
    rows = []
    for row in addition_rows(count, seed, split):
        a, b = _operands(row)
        rows.append({"input": {"messages": row["messages"][:1]},
                     "preferred_output": [{"role": "assistant", "content": str(a + b)}],
                     "non_preferred_output": [{"role": "assistant",
                                               "content": plausible_mistake(a, b, rng)}],
                     "reference_answer": str(a + b)})
    return rows


def reinforcement_rows(count: int, seed: int, split: str) -> list[dict[str, Any]]:
    """OpenAI RFT rows: the prompt, and the answer a grader checks against."""
    rows = []
    for row in addition_rows(count, seed, split):
        a, b = _operands(row)
        rows.append({"messages": row["messages"][:1], "reference_answer": str(a + b)})
    return rows
