"""Usage over time: the organization's usage rows summed per time bucket and group."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Sum
from django.db.models.functions import TruncDay, TruncHour

from posttrain_server.billing.models import UsageRecord
from posttrain_server.tenancy.models import Organization

BUCKETS = {"1d": (TruncDay, 86400), "1h": (TruncHour, 3600)}
GROUPS = {"job": "job_id", "pool": "pool", "method": "method", "kind": "kind"}


def usage_buckets(*, organization: Organization, start: datetime, end: datetime,
                  bucket_width: str, group_by: list[str]) -> list[dict[str, Any]]:
    """Buckets in time order; each holds one result per group (kind is always reported)."""
    trunc, seconds = BUCKETS[bucket_width]
    fields = ["kind", *[GROUPS[name] for name in group_by if name != "kind"]]
    rows = (UsageRecord.objects.filter(organization=organization, created_at__gte=start,
                                       created_at__lt=end)
            .annotate(bucket=trunc("created_at")).values("bucket", *fields)
            .annotate(quantity=Sum("quantity")).order_by("bucket", *fields))
    buckets: dict[int, dict[str, Any]] = {}
    for row in rows:
        begin = int(row["bucket"].timestamp())
        bucket = buckets.setdefault(begin, {"object": "bucket", "start_time": begin,
                                            "end_time": begin + seconds, "results": []})
        result = {"object": "organization.usage.fine_tuning", "kind": row["kind"],
                  "quantity": str(row["quantity"])}
        for name in group_by:
            result[name if name != "job" else "job_id"] = row[GROUPS[name]]
        bucket["results"].append(result)
    return list(buckets.values())
