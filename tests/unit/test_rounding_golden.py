"""The golden rounding table: each bill line exact in Decimal, rounded once, half up, to $1e-6.

Expected amounts are written out by hand (not computed by the code under test); the comment
on each row is the exact unrounded amount.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from posttrain_server.billing.prices import DEFAULT_RATES, PriceRates, job_cost


def book(token_rate: str) -> PriceRates:
    return PriceRates.from_json("golden", {"trained_tokens": {"supervised": {"tiny": token_rate}}},
                                {"cpu": "0.10"})


TOKEN_LINES = [
    # (size, tokens, rates, expected tokens line)
    ("tiny", 0, DEFAULT_RATES, "0.000000"),  # zero
    ("tiny", 4, DEFAULT_RATES, "0.000000"),  # 0.0000004
    ("tiny", 5, DEFAULT_RATES, "0.000001"),  # 0.0000005 half up
    ("tiny", 15, DEFAULT_RATES, "0.000002"),  # 0.0000015 half up
    ("tiny", 25, DEFAULT_RATES, "0.000003"),  # 0.0000025 half up (half-even: 0.000002)
    ("tiny", 35, DEFAULT_RATES, "0.000004"),  # 0.0000035
    ("small", 1, DEFAULT_RATES, "0.000001"),  # 0.0000005
    ("small", 3, DEFAULT_RATES, "0.000002"),  # 0.0000015
    ("small", 999_999, DEFAULT_RATES, "0.500000"),  # 0.4999995 half up
    ("medium", 1, DEFAULT_RATES, "0.000003"),  # 0.000003
    ("medium", 1_234_567, DEFAULT_RATES, "3.703701"),  # 3.703701
    ("medium", 333_333, DEFAULT_RATES, "0.999999"),  # 0.999999
    ("large", 1, DEFAULT_RATES, "0.000008"),  # 0.000008
    ("large", 62_500, DEFAULT_RATES, "0.500000"),  # 0.5
    ("large", 123_456_789, DEFAULT_RATES, "987.654312"),  # 987.654312
    ("tiny", 1_000_000_000, DEFAULT_RATES, "100.000000"),  # 100
    ("tiny", 7_777_777, DEFAULT_RATES, "0.777778"),  # 0.7777777
    ("small", 12_345_678, DEFAULT_RATES, "6.172839"),  # 6.172839
    # Sub-cent per-million prices times millions of tokens.
    ("tiny", 1_500_000, book("0.003"), "0.004500"),  # 0.0045
    ("tiny", 3_000_000, book("0.000333"), "0.000999"),  # 0.000999
    ("tiny", 1_000, book("0.0005"), "0.000001"),  # 0.0000005 half up
    ("tiny", 999, book("0.0005"), "0.000000"),  # 0.0000004995
    ("tiny", 2_500_000, book("0.0007"), "0.001750"),  # 0.00175
    ("tiny", 50_000_000, book("0.00001"), "0.000500"),  # 0.0005
    ("tiny", 49_999, book("0.00001"), "0.000000"),  # 0.00000049999
    ("tiny", 50_000, book("0.00001"), "0.000001"),  # 0.0000005 half up
    ("tiny", 40, book("0.0125"), "0.000001"),  # 0.0000005 half up
    ("tiny", 2_000_000, book("0.0125"), "0.025000"),  # 0.025
    ("tiny", 10**12, book("0"), "0.000000"),  # a zero rate bills nothing
]

COMPUTE_LINES = [
    # (pool, GPU-seconds, expected compute line)
    ("cpu", "0", "0.000000"),
    ("cpu", "0.018", "0.000001"),  # 0.0000005 half up
    ("cpu", "0.017", "0.000000"),  # 0.000000472...
    ("cpu", "3600", "0.100000"),
    ("cpu", "1800", "0.050000"),
    ("blackwell", "0.3", "0.000500"),  # 0.0005
    ("blackwell", "0.0003", "0.000001"),  # 0.0000005 half up
    ("blackwell", "28800", "48.000000"),  # 8 GPUs x 1 hour
    ("rubin", "1.234", "0.004113"),  # 0.0041133...
    ("rubin", "0.00015", "0.000001"),  # 0.0000005 half up
    ("rubin", "0.000149", "0.000000"),  # 0.000000496...
    ("rubin", "7200", "24.000000"),  # 2 GPUs x 1 hour
]


@pytest.mark.parametrize(("size", "tokens", "rates", "expected"), TOKEN_LINES)
def test_a_token_line_rounds_once_half_up_to_a_millionth(size, tokens, rates, expected):
    cost = job_cost(method="supervised", size_class=size, pool="cpu", trained_tokens=tokens,
                    device_seconds=Decimal(0), rates=rates)
    assert str(cost.tokens) == expected


@pytest.mark.parametrize(("pool", "seconds", "expected"), COMPUTE_LINES)
def test_a_gpu_hours_line_rounds_once_half_up_to_a_millionth(pool, seconds, expected):
    cost = job_cost(method="supervised", size_class="tiny", pool=pool, trained_tokens=0,
                    device_seconds=Decimal(seconds))
    assert str(cost.compute) == expected


def test_the_golden_table_has_at_least_thirty_cases():
    assert len(TOKEN_LINES) + len(COMPUTE_LINES) >= 30


def test_the_total_is_the_sum_of_the_rounded_lines_not_the_rounded_sum():
    cost = job_cost(method="supervised", size_class="tiny", pool="cpu", trained_tokens=5,
                    device_seconds=Decimal("0.018"))  # two lines of $0.0000005 each
    assert (str(cost.tokens), str(cost.compute), str(cost.total)) == (
        "0.000001", "0.000001", "0.000002")


def test_rollout_and_eval_tokens_share_the_tokens_line_at_their_own_rates():
    # 1M trained at 0.10 + 2M rollout at 0.05 + 3M eval at 0 = 0.20, one rounding.
    cost = job_cost(method="supervised", size_class="tiny", pool="cpu",
                    trained_tokens=1_000_000, rollout_tokens=2_000_000, eval_tokens=3_000_000,
                    device_seconds=Decimal(0))
    assert str(cost.tokens) == "0.200000"
