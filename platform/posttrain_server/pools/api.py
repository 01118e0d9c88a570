"""``GET /v1/pools``: each pool's prices, capacity, workers online and current load."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.schema import errors
from posttrain_server.pools.render import pool_objects
from posttrain_server.tenancy.auth import organization_of

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
        return Response({"object": "list",
                         "data": pool_objects(organization=organization_of(request))})
