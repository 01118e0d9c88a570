"""Pool reads: which pools exist, which have a worker online, what is queued and running."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db.models import Count, QuerySet
from django.utils import timezone

from posttrain_server.pools.models import Pool, TrainingWorker


def online_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timezone.timedelta(seconds=settings.WORKER_ONLINE_S)


def pool_list(*, enabled_only: bool = False) -> QuerySet[Pool]:
    pools = Pool.objects.all()
    return pools.filter(enabled=True) if enabled_only else pools


def pool_get(*, name: str) -> Pool | None:
    return Pool.objects.filter(name=name).first()


def workers_online(*, pool: str | None = None) -> QuerySet[TrainingWorker]:
    workers = TrainingWorker.objects.filter(last_seen_at__gte=online_cutoff())
    return workers.filter(pool=pool) if pool else workers


def pools_with_workers_online() -> set[str]:
    return set(workers_online().values_list("pool", flat=True).distinct())


def job_counts_by_pool() -> dict[str, dict[str, int]]:
    """{pool: {"queued": n, "running": n}} over every organization (pool load, not jobs)."""
    from posttrain_server.jobs.models import FineTuningJob
    from posttrain_server.jobs.state_machine import JobStatus

    counts: dict[str, dict[str, int]] = {}
    rows = (FineTuningJob.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING,
                                                     JobStatus.PAUSING])
            .values("pool", "status").annotate(n=Count("id")))
    for row in rows:
        key = "queued" if row["status"] == JobStatus.QUEUED else "running"
        entry = counts.setdefault(row["pool"], {"queued": 0, "running": 0})
        entry[key] += row["n"]
    return counts
