"""Shared OpenAPI pieces: the error envelope and list wrappers, for drf-spectacular."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

ErrorSerializer = inline_serializer(
    name="Error",
    fields={"error": inline_serializer(name="ErrorBody", fields={
        "message": serializers.CharField(),
        "type": serializers.CharField(),
        "param": serializers.CharField(allow_null=True),
        "code": serializers.CharField(allow_null=True),
    })},
)


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: OpenApiResponse(ErrorSerializer, description="OpenAI error envelope")
            for code in (*codes, 401)}


def page_parameters() -> list:
    """``after`` and ``limit`` with the bounds the server enforces (pagination.py)."""
    from drf_spectacular.utils import OpenApiParameter

    from posttrain_server.api.pagination import MAX_LIMIT

    return [OpenApiParameter("after", str, description="id of the last object of the page "
                             "before"),
            OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                             description=f"page size, 1 to {MAX_LIMIT}")]


def list_of(name: str, item: serializers.Serializer) -> serializers.Serializer:
    return inline_serializer(name=name, fields={
        "object": serializers.CharField(default="list"),
        "data": serializers.ListField(child=item),
        "has_more": serializers.BooleanField(),
        "first_id": serializers.CharField(allow_null=True),
        "last_id": serializers.CharField(allow_null=True),
    })
