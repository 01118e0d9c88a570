"""``GET /v1/pools``: each pool's prices, capacity, workers online and current load."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.schema import errors
from posttrain_server.billing.selectors import price_rates_current
from posttrain_server.pools import selectors

PoolSerializer = inline_serializer(name="Pool", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "accelerator": serializers.CharField(), "enabled": serializers.BooleanField(),
    "queue": serializers.CharField(),
    "gpus_per_job": serializers.DictField(child=serializers.IntegerField(),
                                          help_text="By model size class"),
    "throughput": serializers.DictField(child=serializers.FloatField(),
                                        help_text="Training tokens/s per GPU by size class"),
    "gpu_hour_rate": serializers.CharField(allow_null=True,
                                           help_text="USD per GPU-hour (decimal string)"),
    "price_version": serializers.CharField(),
    "workers_online": serializers.IntegerField(),
    "workers": serializers.ListField(child=serializers.JSONField()),
    "jobs": serializers.DictField(child=serializers.IntegerField(),
                                  help_text="queued and running jobs (all organizations)"),
})


class PoolListView(APIView):
    @extend_schema(operation_id="pools_list", description="Posttrain extension.",
                   responses={200: inline_serializer(name="PoolList", fields={
                       "object": serializers.CharField(),
                       "data": serializers.ListField(child=PoolSerializer)}),
                       **errors()})
    def get(self, request: Request) -> Response:
        rates = price_rates_current()
        counts = selectors.job_counts_by_pool()
        workers: dict[str, list[dict]] = {}
        for worker in selectors.workers_online().order_by("name"):
            workers.setdefault(worker.pool, []).append({
                "name": worker.name, "host": worker.host, "devices": worker.devices,
                "device_kind": worker.device_kind, "current_job": worker.current_job or None,
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
        return Response({"object": "list", "data": data})
