"""Turning ``"auto"`` into numbers. Resolved values are stored on the job and shown to users.

Rules (documented in README): ``n_epochs`` auto is 3 (1 for datasets over 50k examples);
``batch_size`` auto is about 0.2% of the examples, between 1 and 64 (OpenAI's rule of thumb);
``learning_rate_multiplier`` auto is 1, times the base model's LoRA or full learning rate.
"""

from __future__ import annotations

import math
from typing import Any


def resolve_supervised(requested: dict[str, Any], *, example_count: int,
                       base_learning_rate: float) -> dict[str, Any]:
    n_epochs = requested.get("n_epochs", "auto")
    batch_size = requested.get("batch_size", "auto")
    multiplier = requested.get("learning_rate_multiplier", "auto")
    if n_epochs == "auto":
        n_epochs = 1 if example_count > 50_000 else 3
    if batch_size == "auto":
        batch_size = min(64, max(1, math.ceil(example_count * 0.002)))
    if multiplier == "auto":
        multiplier = 1.0
    return {
        "n_epochs": int(n_epochs),
        "batch_size": int(batch_size),
        "learning_rate_multiplier": float(multiplier),
        "learning_rate": base_learning_rate * float(multiplier),
    }
