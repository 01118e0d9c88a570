"""Pool writes: recording training workers' presence heartbeats."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone

from posttrain_server.pools.models import TrainingWorker
from workers import contract


def worker_heartbeat_record(*, beat: contract.WorkerHeartbeat) -> TrainingWorker:
    """Upsert the worker's row. ``last_seen_at`` is the platform's clock, not the worker's,
    so a worker with a skewed clock is still judged online or offline correctly."""
    worker, _ = TrainingWorker.objects.update_or_create(
        name=beat.worker[:200],
        defaults={"pool": beat.pool, "host": beat.host[:200], "devices": beat.devices,
                  "device_kind": beat.device_kind[:200], "current_job": beat.current_job or "",
                  "started_at": datetime.fromtimestamp(beat.started_at, tz=UTC),
                  "last_seen_at": timezone.now()})
    return worker


def pools_seed_defaults() -> list[str]:
    """Create the default pools that do not exist (never overwrites an edited pool).

    The data migration seeds them on a new database; ``manage.py seed_pools`` (and tests that
    flush the database) call this to put back any that are missing. Returns the names created.
    """
    from posttrain_server.billing.prices import DEFAULT_EVAL_THROUGHPUT, DEFAULT_POOLS
    from posttrain_server.pools.models import Pool

    created = []
    for name, fields in DEFAULT_POOLS.items():
        defaults = {**fields, "eval_throughput": DEFAULT_EVAL_THROUGHPUT.get(name, {})}
        if Pool.objects.get_or_create(name=name, defaults=defaults)[1]:
            created.append(name)
    return created
