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
                  "kind": kind, "quantity": quantity},
    )
    return created


def usage_totals(*, job) -> dict[str, Decimal]:
    rows = UsageRecord.objects.filter(job=job).values("kind").annotate(total=Sum("quantity"))
    totals = {kind: Decimal(0) for kind in UsageKind.values}
    totals.update({row["kind"]: row["total"] for row in rows})
    return totals
