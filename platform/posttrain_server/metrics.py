"""Prometheus metrics: what an operator watches (jobs, queues, workers, throughput, latency).

Gauges are computed from the database and the broker at scrape time (always true, nothing
to keep in sync); request latency is a histogram observed by the request middleware. Under
gunicorn's several processes, ``PROMETHEUS_MULTIPROC_DIR`` makes the histogram add up across
workers (the embedded stack, compose and k8s set it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from posttrain_server.api.errors import json_error
from workers import contract

REQUEST_LATENCY = Histogram(
    "posttrain_http_request_duration_seconds", "HTTP request latency by route and status",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


def observe_request(request: HttpRequest, status: int, seconds: float) -> None:
    match = getattr(request, "resolver_match", None)
    route = f"/{match.route}" if match is not None and match.route else "unmatched"
    REQUEST_LATENCY.labels(request.method, route, str(status)).observe(seconds)


def queue_depths(queues: list[str]) -> dict[str, int]:
    """Messages waiting per queue, from the broker itself (Redis, AMQP, filesystem alike)."""
    from posttrain_server.celery_app import app

    depths: dict[str, int] = {}
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=2)
            channel = connection.default_channel
            for queue in queues:
                try:
                    depths[queue] = channel.queue_declare(queue=queue, passive=True)[1]
                except Exception:  # noqa: BLE001 - an undeclared queue simply has no depth yet
                    depths[queue] = 0
    except Exception:  # noqa: BLE001 - the broker being down must not break /metrics
        return {}
    return depths


class PlatformCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        from posttrain_server.jobs.models import Attempt, FineTuningJob
        from posttrain_server.pools.selectors import pool_list, workers_online

        jobs = GaugeMetricFamily("posttrain_jobs", "Fine-tuning jobs by status and pool",
                                 labels=["status", "pool"])
        for row in FineTuningJob.objects.values("status", "pool").annotate(n=Count("id")):
            jobs.add_metric([row["status"], row["pool"]], row["n"])
        yield jobs

        depth = GaugeMetricFamily("posttrain_queue_depth", "Messages waiting in a broker queue",
                                  labels=["queue"])
        pools = [pool.name for pool in pool_list()]
        names = [contract.PLATFORM_QUEUE] + [contract.train_queue(pool) for pool in pools]
        for queue, count in queue_depths(names).items():
            depth.add_metric([queue], count)
        yield depth

        fresh = timezone.now() - timezone.timedelta(seconds=settings.LEASE_TIMEOUT_S)
        running = Attempt.objects.filter(status="running", heartbeat_at__gte=fresh)
        busy = GaugeMetricFamily("posttrain_workers_busy",
                                 "Training workers holding a live attempt, by pool",
                                 labels=["pool"])
        for row in running.values("job__pool").annotate(n=Count("worker", distinct=True)):
            busy.add_metric([row["job__pool"]], row["n"])
        yield busy

        online = GaugeMetricFamily("posttrain_workers_online",
                                   "Training workers heartbeating their presence, by pool",
                                   labels=["pool"])
        for row in workers_online().values("pool").annotate(n=Count("name")):
            online.add_metric([row["pool"]], row["n"])
        yield online

        speed = GaugeMetricFamily("posttrain_job_tokens_per_second",
                                  "Trained tokens per second of running jobs (this attempt)",
                                  labels=["job", "pool"])
        for job in FineTuningJob.objects.filter(status="running").only("id", "pool",
                                                                        "progress"):
            progress: dict[str, Any] = job.progress or {}
            elapsed = float(progress.get("elapsed_s") or 0)
            if elapsed > 0:
                speed.add_metric([job.id, job.pool],
                                 float(progress.get("attempt_trained_tokens", 0)) / elapsed)
        yield speed


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = settings.METRICS_TOKEN
    if token and request.headers.get("Authorization", "") != f"Bearer {token}":
        return json_error(401, "metrics need 'Authorization: Bearer <POSTTRAIN_METRICS_TOKEN>'")
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REQUEST_LATENCY)
    registry.register(PlatformCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
