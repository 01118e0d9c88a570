"""Usage writes. Rows are only ever inserted, keyed ``job:attempt:kind:segment``."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum

from posttrain_server.billing.models import UsageKind, UsageRecord


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
