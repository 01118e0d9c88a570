"""Turning ``"auto"`` into numbers. Resolved values are stored on the job and shown to users.

Rules (documented in README): ``n_epochs`` auto is 3 (1 for datasets over 50k examples);
``batch_size`` auto is about 0.2% of the examples, between 1 and 64 (OpenAI's rule of thumb);
``learning_rate_multiplier`` auto is 1, times the base model's LoRA or full learning rate.
"""

from __future__ import annotations

import math
from typing import Any

# Fixed "auto" values, here once: the resolvers use them and the console shows them.
DPO_DEFAULTS: dict[str, float] = {"beta": 0.1, "sft_weight": 0.0}
REINFORCEMENT_DEFAULTS: dict[str, Any] = {"generations_per_prompt": 8, "max_completion_length": 16,
                                          "temperature": 1.0, "kl_beta": 0.0, "eval_interval": 0}
# What "auto" means for the values that depend on the data, in words for people.
AUTO_RULES: dict[str, str] = {
    "n_epochs": "3 (1 above 50,000 examples)",
    "batch_size": "0.2% of the examples, between 1 and 64",
    "learning_rate_multiplier": "1 (times the model's base learning rate)",
}


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


def resolve_dpo(requested: dict[str, Any], *, example_count: int,
                base_learning_rate: float) -> dict[str, Any]:
    """SFT's rules plus ``beta`` (auto 0.1, TRL's and the DPO paper's default) and
    ``sft_weight`` (Posttrain extension, auto 0: plain DPO as OpenAI documents it)."""
    resolved = resolve_supervised(requested, example_count=example_count,
                                  base_learning_rate=base_learning_rate)
    beta = requested.get("beta", "auto")
    sft_weight = requested.get("sft_weight", "auto")
    resolved["beta"] = DPO_DEFAULTS["beta"] if beta == "auto" else float(beta)
    resolved["sft_weight"] = DPO_DEFAULTS["sft_weight"] if sft_weight == "auto" else float(
        sft_weight)
    return resolved


def resolve_reinforcement(requested: dict[str, Any], *, example_count: int,
                          base_learning_rate: float) -> dict[str, Any]:
    """OpenAI's RFT hyperparameters plus ours; auto values sized for small models.

    ``generations_per_prompt`` auto 8 (GRPO needs several samples to compare), completion
    length auto 16 tokens, temperature auto 1.0 (sampling must explore), ``kl_beta`` auto 0
    (TRL's default: no reference model is held). ``eval_samples`` auto (None) uses the
    job's ``eval_samples`` extension, like the other methods.
    """
    resolved = resolve_supervised(requested, example_count=example_count,
                                  base_learning_rate=base_learning_rate)
    for name, default in REINFORCEMENT_DEFAULTS.items():
        value = requested.get(name, "auto")
        resolved[name] = default if value == "auto" else type(default)(value)
    samples = requested.get("eval_samples", "auto")
    resolved["eval_samples"] = None if samples == "auto" else int(samples)
    return resolved
