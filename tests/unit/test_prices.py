"""The price table: exact Decimal money, each line rounded once, half up, to a millionth."""

from __future__ import annotations

from decimal import Decimal

import pytest

from posttrain_server.billing import prices
from posttrain_server.billing.prices import Cost, PriceRates, job_cost


def cost(tokens: int = 0, seconds: str = "0", *, size: str = "tiny", pool: str = "cpu",
         method: str = "supervised") -> Cost:
    return job_cost(method=method, size_class=size, pool=pool, trained_tokens=tokens,
                    device_seconds=Decimal(seconds))


def test_a_million_tiny_tokens_and_an_hour_of_cpu_cost_ten_cents_each():
    result = cost(1_000_000, "3600")

    assert result.tokens == Decimal("0.100000")
    assert result.compute == Decimal("0.100000")
    assert result.total == Decimal("0.200000")
    assert str(result.tokens) == "0.100000"
    assert str(result.total) == "0.200000"


@pytest.mark.parametrize(("size", "tokens", "expected"), [
    ("tiny", 2_500_000, "0.250000"),
    ("small", 2_500_000, "1.250000"),
    ("medium", 2_500_000, "7.500000"),
    ("large", 2_500_000, "20.000000"),
    ("large", 123_456_789, "987.654312"),
    ("unknown-size", 1_000_000, "0.500000"),  # falls back to the small rate
])
def test_token_lines_use_the_rate_of_the_method_and_size(size, tokens, expected):
    assert cost(tokens, size=size).tokens == Decimal(expected)


@pytest.mark.parametrize(("pool", "seconds", "expected"), [
    ("cpu", "1800", "0.050000"),
    ("blackwell", "3600", "6.000000"),
    ("blackwell", "28800", "48.000000"),  # 8 devices x 1 hour, passed as device-seconds
    ("rubin", "900", "3.000000"),
    ("rubin", "1.234", "0.004113"),  # 0.0041133... rounds down
])
def test_compute_lines_use_the_pools_hourly_rate(pool, seconds, expected):
    assert cost(0, seconds, pool=pool).compute == Decimal(expected)


def test_an_unknown_pool_is_refused():
    with pytest.raises(KeyError):
        cost(0, "1", pool="tpu")


def test_amounts_are_decimals_with_exactly_six_places():
    result = cost(1, "1")

    for amount in (result.tokens, result.compute, result.total):
        assert type(amount) is Decimal
        assert amount.as_tuple().exponent == -6


def test_a_float_duration_is_refused_so_binary_rounding_never_reaches_a_bill():
    with pytest.raises(TypeError):
        job_cost(method="supervised", size_class="tiny", pool="cpu", trained_tokens=1,
                 device_seconds=0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("tokens", "expected"), [
    (4, "0.000000"),   # 0.0000004
    (5, "0.000001"),   # 0.0000005: half rounds up (half-even would give 0.000000)
    (15, "0.000002"),  # 0.0000015
    (25, "0.000003"),  # 0.0000025: half up (half-even would give 0.000002)
    (14, "0.000001"),  # 0.0000014
])
def test_token_lines_round_half_up_to_a_millionth(tokens, expected):
    assert cost(tokens).tokens == Decimal(expected)


def test_compute_lines_round_half_up_to_a_millionth():
    # 0.018 s x $0.10/h = $0.0000005 exactly
    assert cost(0, "0.018").compute == Decimal("0.000001")
    assert cost(0, "0.017").compute == Decimal("0.000000")


def test_each_line_is_rounded_once_and_the_total_is_the_sum_of_the_rounded_lines():
    result = cost(5, "0.018")  # each line is $0.0000005 before rounding

    assert result.tokens == Decimal("0.000001")
    assert result.compute == Decimal("0.000001")
    # Rounding the unrounded sum ($0.000001) would give a different total.
    assert result.total == Decimal("0.000002")


def test_the_rate_is_not_rounded_per_token():
    # 3 small tokens at $0.50/M = $0.0000015; rounding per token first would give 0.000003.
    assert cost(3, size="small").tokens == Decimal("0.000002")


def test_zero_usage_costs_zero():
    result = cost(0, "0")

    assert result.tokens == result.compute == result.total == Decimal("0.000000")
    assert str(result.total) == "0.000000"


def _book(token_rate: str, hour_rate: str) -> PriceRates:
    return PriceRates.from_json("test", {"trained_tokens": {"supervised": {"tiny": token_rate}}},
                                {"cpu": hour_rate})


def test_zero_rates_bill_nothing():
    result = job_cost(method="supervised", size_class="tiny", pool="cpu",
                      trained_tokens=10_000_000_000, device_seconds=Decimal("360000"),
                      rates=_book("0", "0"))

    assert result.tokens == Decimal("0")
    assert result.compute == Decimal("0")
    assert result.total == Decimal("0")
    assert result.as_dict()["total"] == "0.000000"
    assert result.as_dict()["price_version"] == "test"


def test_a_zero_token_rate_still_bills_compute_and_vice_versa():
    def priced(book: PriceRates) -> Cost:
        return job_cost(method="supervised", size_class="tiny", pool="cpu",
                        trained_tokens=1_000_000, device_seconds=Decimal("3600"), rates=book)

    assert priced(_book("0", "0.10")) == Cost(Decimal("0.000000"), Decimal("0.100000"), "test")
    assert priced(_book("0.10", "0")) == Cost(Decimal("0.100000"), Decimal("0.000000"), "test")


def test_large_bills_stay_exact():
    result = cost(10**12, "3600000", size="large", pool="rubin")

    assert result.tokens == Decimal("8000000.000000")
    assert result.compute == Decimal("12000.000000")
    assert result.total == Decimal("8012000.000000")


def test_the_cost_dict_carries_decimal_strings_and_the_price_version():
    assert cost(1_000_000, "3600").as_dict() == {
        "currency": "usd", "tokens": "0.100000", "compute": "0.100000", "total": "0.200000",
        "price_version": prices.PRICE_VERSION,
        "tokens_by_kind": {"trained_tokens": "0.100000", "rollout_tokens": "0.000000",
                           "eval_tokens": "0.000000"},
    }


def test_the_tokens_line_is_rounded_once_and_its_parts_each_on_their_own():
    book = PriceRates.from_json("t", {"trained_tokens": {"*": {"tiny": "0.0000004"}},
                                      "eval_tokens": {"*": {"tiny": "0.0000004"}}}, {"cpu": "0"})
    result = job_cost(method="supervised", size_class="tiny", pool="cpu",
                      trained_tokens=1_500_000, eval_tokens=1_500_000,
                      device_seconds=Decimal(0), rates=book)
    # 0.0000006 + 0.0000006 = 0.0000012 -> 0.000001; each part alone rounds to 0.000001.
    assert result.tokens == Decimal("0.000001")
    assert result.tokens_by_kind["eval_tokens"] == Decimal("0.000001")
    assert result.tokens_by_kind["trained_tokens"] == Decimal("0.000001")


def test_rollout_tokens_are_billed_on_the_tokens_line_at_their_own_rate():
    trained_only = cost(1_000_000, method="reinforcement")
    with_rollouts = job_cost(method="reinforcement", size_class="tiny", pool="cpu",
                             trained_tokens=1_000_000, device_seconds=Decimal(0),
                             rollout_tokens=2_000_000)

    # Price book 2026-11-01: RL trained tokens $0.20/M (tiny), rollout tokens $0.05/M.
    assert with_rollouts.tokens - trained_only.tokens == Decimal("0.100000")
    assert with_rollouts.total == Decimal("0.300000")


def test_dpo_tokens_have_a_price():
    assert cost(1_000_000, method="dpo").tokens == Decimal("0.200000")  # twice SFT's rate
