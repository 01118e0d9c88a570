"""The price table and the pools it prices: the one place where money rules live.

A job is billed ``trained tokens x per-token rate (by method and model size)`` plus
``device-hours x the pool's hourly rate``. Either rate may be zero. Figures are illustrative
defaults (a later change moves them into a versioned, editable price book); a job stores the
``PRICE_VERSION`` it was billed with so a bill can always be explained.

Published framing encoded in the defaults: Rubin trains the largest models with a quarter of
Blackwell's GPUs and brings cost per token to about a tenth.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

PRICE_VERSION = "2026-11-01"
MONEY_QUANTUM = Decimal("0.000001")  # bills are exact to a millionth of a dollar
TOKENS_PER_UNIT = Decimal(1_000_000)
SECONDS_PER_HOUR = Decimal(3600)


@dataclass(frozen=True)
class Pool:
    name: str
    accelerator: str
    device_hour_rate: Decimal  # dollars per device-hour
    devices_per_job: int


POOLS: dict[str, Pool] = {
    "cpu": Pool("cpu", "CPU (embedded)", Decimal("0.10"), 1),  # a device = one CPU process
    "blackwell": Pool("blackwell", "NVIDIA B200 class", Decimal("6.00"), 8),
    "rubin": Pool("rubin", "NVIDIA Vera Rubin class", Decimal("12.00"), 2),
}

# Dollars per million trained tokens, by (method, model size class).
TOKEN_RATES: dict[tuple[str, str], Decimal] = {
    ("supervised", "tiny"): Decimal("0.10"),
    ("supervised", "small"): Decimal("0.50"),
    ("supervised", "medium"): Decimal("3.00"),
    ("supervised", "large"): Decimal("8.00"),
    # DPO trains on two answers per prompt and holds a reference model: the per-token rate is
    # SFT's (the tokens counted are chosen + rejected, so a pair already costs twice).
    ("dpo", "tiny"): Decimal("0.10"),
    ("dpo", "small"): Decimal("0.50"),
    ("dpo", "medium"): Decimal("3.00"),
    ("dpo", "large"): Decimal("8.00"),
    ("reinforcement", "tiny"): Decimal("0.10"),
    ("reinforcement", "small"): Decimal("0.50"),
    ("reinforcement", "medium"): Decimal("3.00"),
    ("reinforcement", "large"): Decimal("8.00"),
}

# Dollars per million rollout tokens (reinforcement: prompt + generated tokens of every
# sampled completion), by model size class. Generation is cheaper per token than training.
ROLLOUT_TOKEN_RATES: dict[str, Decimal] = {
    "tiny": Decimal("0.05"),
    "small": Decimal("0.20"),
    "medium": Decimal("1.00"),
    "large": Decimal("3.00"),
}


@dataclass(frozen=True)
class Cost:
    tokens: Decimal
    compute: Decimal

    @property
    def total(self) -> Decimal:
        return self.tokens + self.compute

    def as_dict(self) -> dict[str, str]:
        return {"currency": "usd", "tokens": str(self.tokens), "compute": str(self.compute),
                "total": str(self.total), "price_version": PRICE_VERSION}


def money(amount: Decimal) -> Decimal:
    return amount.quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)


def token_rate(method: str, size_class: str) -> Decimal:
    return TOKEN_RATES.get((method, size_class), TOKEN_RATES[(method, "small")])


def rollout_token_rate(size_class: str) -> Decimal:
    return ROLLOUT_TOKEN_RATES.get(size_class, ROLLOUT_TOKEN_RATES["small"])


def job_cost(*, method: str, size_class: str, pool: str, trained_tokens: int,
             device_seconds: Decimal, rollout_tokens: int = 0) -> Cost:
    """Each line is rounded once, here; the total is the sum of the rounded lines.

    The tokens line holds trained tokens and rollout tokens, each at its own rate.
    """
    tokens = money(Decimal(trained_tokens) * token_rate(method, size_class) / TOKENS_PER_UNIT
                   + Decimal(rollout_tokens) * rollout_token_rate(size_class) / TOKENS_PER_UNIT)
    compute = money(device_seconds * POOLS[pool].device_hour_rate / SECONDS_PER_HOUR)
    return Cost(tokens=tokens, compute=compute)
