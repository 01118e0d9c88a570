"""Usage writes. Rows are only ever inserted, keyed ``job:attempt:kind:segment``."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum

from posttrain_server.billing import prices
from posttrain_server.billing.models import UsageKind, UsageRecord
from workers import contract


def usage_record(*, job, attempt: int, kind: UsageKind, quantity: Decimal,
                 segment: str = "final") -> bool:
    """Insert once; a replay of the same (job, attempt, kind, segment) changes nothing."""
    key = f"{job.id}:{attempt}:{kind}:{segment}"
    _, created = UsageRecord.objects.get_or_create(
        idempotency_key=key,
        defaults={"organization_id": job.organization_id, "job": job, "attempt": attempt,
                  "kind": kind, "quantity": quantity, "pool": job.pool,
                  "method": job.method["type"], "size_class": job.size_class,
                  "price_version": job.price_version},
    )
    return created


def usage_totals(*, job) -> dict[str, Decimal]:
    rows = UsageRecord.objects.filter(job=job).values("kind").annotate(total=Sum("quantity"))
    totals = {kind: Decimal(0) for kind in UsageKind.values}
    totals.update({row["kind"]: row["total"] for row in rows})
    return totals


def price_book_seed_default() -> bool:
    """Create the default price book version if it does not exist (never overwrites one)."""
    from datetime import UTC, datetime

    from posttrain_server.billing.models import PriceBook
    from posttrain_server.billing.prices import DEFAULT_RATES

    _, created = PriceBook.objects.get_or_create(
        version=DEFAULT_RATES.version,
        defaults={"effective_at": datetime(2026, 11, 1, tzinfo=UTC), **DEFAULT_RATES.as_json(),
                  "note": "Illustrative defaults; edit in the admin by adding a new version."})
    return created


def job_usage_cost(*, job) -> prices.Cost:
    """A job's bill so far: its usage rows priced with the price book it was quoted with."""
    from posttrain_server.billing.selectors import price_rates_for

    totals = usage_totals(job=job)
    return prices.job_cost(method=job.method["type"], size_class=job.size_class, pool=job.pool,
                           trained_tokens=int(totals[UsageKind.TRAINED_TOKENS]),
                           device_seconds=totals[UsageKind.DEVICE_SECONDS],
                           rollout_tokens=int(totals[UsageKind.ROLLOUT_TOKENS]),
                           eval_tokens=int(totals[UsageKind.EVAL_TOKENS]),
                           rates=price_rates_for(version=job.price_version))


def budget_spec(*, job) -> contract.BudgetSpec | None:
    """What a worker needs to stop the job at its ``max_cost`` (None: no cap)."""
    from posttrain_server.billing.selectors import price_rates_for

    if job.max_cost is None:
        return None
    rates = price_rates_for(version=job.price_version)
    return contract.BudgetSpec(
        max_cost=str(job.max_cost), spent_before=str(job_usage_cost(job=job).total),
        token_rate_per_million=str(rates.token_rate("trained_tokens", job.method["type"],
                                                    job.size_class)),
        gpu_hour_rate=str(rates.gpu_hour_rate(job.pool)), gpus=job.training.get("gpus", 1),
        eval_token_rate_per_million=str(rates.token_rate("eval_tokens", job.method["type"],
                                                         job.size_class)))
