"""Which rows a job trains on: the one rule the trainer and the platform's estimate share.

Kept free of torch/transformers so the platform can import it to count, before a job runs,
exactly the tokens the trainer will train on (and bill).
"""

from __future__ import annotations

import random
from typing import Any


def split_eval(train: list[Any], validation: list[Any], samples: int, seed: int
               ) -> tuple[list[Any], list[Any]]:
    """Held-out rows to score: the validation file, else a seeded slice kept out of training."""
    if samples <= 0:
        return train, []
    if validation:
        return train, validation[:samples]
    holdout = min(samples, len(train) // 10)
    shuffled = list(train)
    random.Random(seed).shuffle(shuffled)
    return shuffled[holdout:], shuffled[:holdout]
