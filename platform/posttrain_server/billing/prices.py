"""Money rules: the price book's shape, its defaults, and how a bill line is computed.

This is the one place where money rules live. A job is billed, per usage kind,
``tokens x per-token rate (by kind, method and model size class)`` plus
``GPU-hours x the pool's hourly rate``; either rate may be zero (token-only or hours-only
pricing). Rates are versioned: the database holds ``PriceBook`` rows (editable in the admin),
a job stores the version it was quoted with and is billed with that same version.

Rounding rule (the only one): each bill line (a job's tokens line, its GPU-hours line, an
invoice line) is computed exactly with ``Decimal`` and rounded **once**, half up, to a
millionth of a dollar; a total is the sum of its rounded lines.

The defaults below seed the first price book (migration ``billing.0002``). They are
illustrative and encode the published framing: Rubin trains the largest models with a quarter
of Blackwell's GPUs and brings cost per token to about a tenth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

PRICE_VERSION = "2026-11-01"  # the version of the default (seeded) price book
MONEY_QUANTUM = Decimal("0.000001")  # bills are exact to a millionth of a dollar
TOKENS_PER_UNIT = Decimal(1_000_000)  # token rates are dollars per million tokens
SECONDS_PER_HOUR = Decimal(3600)
ANY_METHOD = "*"
FALLBACK_SIZE = "small"

# Usage kinds priced per token; "device_seconds" (GPU-seconds) is priced per pool hour.
TOKEN_KINDS = ("trained_tokens", "rollout_tokens", "eval_tokens")


@dataclass(frozen=True)
class PriceRates:
    """One version of the price book, as plain data (the database row converts to this).

    ``token_rates[kind][method][size_class]`` is dollars per million tokens (method ``*``
    applies to any method); ``gpu_hour_rates[pool]`` is dollars per GPU-hour.
    """

    version: str
    token_rates: Mapping[str, Mapping[str, Mapping[str, Decimal]]]
    gpu_hour_rates: Mapping[str, Decimal] = field(default_factory=dict)

    def token_rate(self, kind: str, method: str, size_class: str) -> Decimal:
        by_method = self.token_rates.get(kind, {})
        by_size = by_method.get(method) or by_method.get(ANY_METHOD) or {}
        if not by_size:
            return Decimal(0)
        return by_size.get(size_class, by_size.get(FALLBACK_SIZE, Decimal(0)))

    def gpu_hour_rate(self, pool: str) -> Decimal:
        return self.gpu_hour_rates[pool]  # an unpriced pool is a configuration error

    def as_json(self) -> dict:
        return {"token_rates": {k: {m: {s: str(r) for s, r in sizes.items()}
                                    for m, sizes in methods.items()}
                                for k, methods in self.token_rates.items()},
                "gpu_hour_rates": {p: str(r) for p, r in self.gpu_hour_rates.items()}}

    @classmethod
    def from_json(cls, version: str, token_rates: dict, gpu_hour_rates: dict) -> PriceRates:
        return cls(version=version,
                   token_rates={k: {m: {s: Decimal(str(r)) for s, r in sizes.items()}
                                    for m, sizes in methods.items()}
                                for k, methods in token_rates.items()},
                   gpu_hour_rates={p: Decimal(str(r)) for p, r in gpu_hour_rates.items()})


def _d(mapping: dict[str, str]) -> dict[str, Decimal]:
    return {key: Decimal(value) for key, value in mapping.items()}


DEFAULT_RATES = PriceRates(
    version=PRICE_VERSION,
    token_rates={
        "trained_tokens": {
            "supervised": _d({"tiny": "0.10", "small": "0.50", "medium": "3.00",
                              "large": "8.00"}),
            "dpo": _d({"tiny": "0.20", "small": "1.00", "medium": "6.00", "large": "16.00"}),
            "reinforcement": _d({"tiny": "0.20", "small": "1.00", "medium": "6.00",
                                 "large": "16.00"}),
        },
        "rollout_tokens": {ANY_METHOD: _d({"tiny": "0.05", "small": "0.25", "medium": "1.50",
                                           "large": "4.00"})},
        "eval_tokens": {ANY_METHOD: _d({"tiny": "0", "small": "0", "medium": "0",
                                        "large": "0"})},
    },
    gpu_hour_rates=_d({"cpu": "0.10", "blackwell": "6.00", "rubin": "12.00"}),
)

# Pools seeded by migration ``pools.0002`` (illustrative, editable in the admin): GPUs per job
# and training throughput (tokens per second per GPU, supervised) by model size class.
DEFAULT_POOLS: dict[str, dict] = {
    "cpu": {"accelerator": "CPU (embedded)",
            "gpus_per_job": {"tiny": 1, "small": 1, "medium": 1, "large": 1},
            "throughput": {"tiny": 9000, "small": 150, "medium": 10, "large": 1},
            "startup_seconds": 5},
    "blackwell": {"accelerator": "NVIDIA B200 class",
                  "gpus_per_job": {"tiny": 1, "small": 1, "medium": 2, "large": 8},
                  "throughput": {"tiny": 2_000_000, "small": 60_000, "medium": 12_000,
                                 "large": 1_500},
                  "startup_seconds": 60},
    # A quarter of Blackwell's GPUs for the largest models; 20x the throughput per GPU at
    # twice the hourly rate gives about a tenth of the cost per token.
    "rubin": {"accelerator": "NVIDIA Vera Rubin class",
              "gpus_per_job": {"tiny": 1, "small": 1, "medium": 1, "large": 2},
              "throughput": {"tiny": 40_000_000, "small": 1_200_000, "medium": 240_000,
                             "large": 30_000},
              "startup_seconds": 60},
}


# Eval tokens per second (one device) by pool and size class, seeded by migration
# ``pools.0003`` (kept apart from DEFAULT_POOLS, which migration ``pools.0002`` applies to a
# model without this field). cpu/tiny measured on a 2-core machine: greedy answers in 64-row
# batches run at about a third of training's tokens/s. Pools without a figure use their
# training throughput until calibrated.
DEFAULT_EVAL_THROUGHPUT: dict[str, dict[str, int]] = {"cpu": {"tiny": 3000}}


@dataclass(frozen=True)
class Cost:
    """A job's bill: two lines, each rounded once. ``tokens_by_kind`` shows what the tokens
    line is made of (each part rounded on its own, for display: the line is rounded once from
    the exact sum, so the parts may differ from it by up to $0.000001 each)."""

    tokens: Decimal
    compute: Decimal
    price_version: str = PRICE_VERSION
    tokens_by_kind: Mapping[str, Decimal] = field(default_factory=dict, compare=False)

    @property
    def total(self) -> Decimal:
        return self.tokens + self.compute

    def as_dict(self) -> dict[str, str]:
        return {"currency": "usd", "tokens": str(self.tokens), "compute": str(self.compute),
                "total": str(self.total), "price_version": self.price_version,
                "tokens_by_kind": {kind: str(part) for kind, part in self.tokens_by_kind.items()}}


def money(amount: Decimal) -> Decimal:
    """The rounding rule: once per line, half up, to a millionth of a dollar."""
    if not isinstance(amount, Decimal):
        raise TypeError(f"money must be Decimal, not {type(amount).__name__}")
    return amount.quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)


def token_rate(method: str, size_class: str, *, kind: str = "trained_tokens",
               rates: PriceRates = DEFAULT_RATES) -> Decimal:
    return rates.token_rate(kind, method, size_class)


def job_cost(*, method: str, size_class: str, pool: str, trained_tokens: int,
             device_seconds: Decimal, rollout_tokens: int = 0, eval_tokens: int = 0,
             rates: PriceRates = DEFAULT_RATES) -> Cost:
    """A job's two lines: all its tokens (every kind at its rate), and its GPU-hours.

    Each line is rounded once, here; the total is the sum of the rounded lines.
    """
    if not isinstance(device_seconds, Decimal):
        raise TypeError("device_seconds must be a Decimal")
    parts = {kind: Decimal(count) * rates.token_rate(kind, method, size_class)
             / TOKENS_PER_UNIT
             for kind, count in (("trained_tokens", trained_tokens),
                                 ("rollout_tokens", rollout_tokens),
                                 ("eval_tokens", eval_tokens))}
    tokens = money(sum(parts.values(), Decimal(0)))
    compute = money(device_seconds * rates.gpu_hour_rate(pool) / SECONDS_PER_HOUR)
    return Cost(tokens=tokens, compute=compute, price_version=rates.version,
                tokens_by_kind={kind: money(part) for kind, part in parts.items()})
