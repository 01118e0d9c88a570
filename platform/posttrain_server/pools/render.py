"""Pool objects as ``GET /v1/pools`` and the console show them: prices, capacity, workers
online and current load, read once so both surfaces agree."""

from __future__ import annotations

from typing import Any

from posttrain_server.billing.selectors import price_rates_current
from posttrain_server.pools import selectors
from posttrain_server.tenancy.models import Organization


def pool_objects(*, organization: Organization) -> list[dict[str, Any]]:
    """Workers show the job they run only to its organization; others see them busy."""
    from posttrain_server.jobs.models import FineTuningJob

    rates = price_rates_current()
    counts = selectors.job_counts_by_pool()
    online = list(selectors.workers_online().order_by("name"))
    own = set(FineTuningJob.objects.filter(
        organization=organization, id__in=[w.current_job for w in online if w.current_job])
        .values_list("id", flat=True))
    workers: dict[str, list[dict[str, Any]]] = {}
    for worker in online:
        workers.setdefault(worker.pool, []).append({
            "name": worker.name, "host": worker.host, "devices": worker.devices,
            "device_kind": worker.device_kind, "busy": bool(worker.current_job),
            "current_job": worker.current_job if worker.current_job in own else None,
            "last_seen_at": int(worker.last_seen_at.timestamp())})
    data = []
    for pool in selectors.pool_list():
        rate = rates.gpu_hour_rates.get(pool.name)
        data.append({
            "id": pool.name, "object": "pool", "accelerator": pool.accelerator,
            "enabled": pool.enabled, "queue": pool.queue,
            "gpus_per_job": pool.gpus_per_job, "throughput": pool.throughput,
            "gpu_hour_rate": str(rate) if rate is not None else None,
            "price_version": rates.version,
            "workers_online": len(workers.get(pool.name, [])),
            "workers": workers.get(pool.name, []),
            "jobs": counts.get(pool.name, {"queued": 0, "running": 0}),
        })
    return data
