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
    """The error responses of an authenticated operation: ``codes`` plus 401 (no or a bad
    key) and 429 (the per-key rate limit), which every one of them can answer."""
    return {code: OpenApiResponse(ErrorSerializer, description="OpenAI error envelope")
            for code in (*codes, 401, 429)}


def _component_name(serializer: type) -> str:
    name = serializer.__name__
    return (name[: -len("Serializer")] if name.endswith("Serializer") else name) + "Request"


def strict_request_bodies(result: dict, generator: object, request: object,
                          public: bool) -> dict:
    """Postprocessing hook: ``additionalProperties: false`` on request bodies whose serializer
    refuses unknown fields (``StrictSerializer``), so the schema says what the server does and
    generated clients and fuzzers (schemathesis) never send a field we answer 400 to."""
    from posttrain_server.jobs.serializers import StrictSerializer

    strict, pending = set(), [StrictSerializer]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        strict.add(_component_name(cls))
    for name, schema in result.get("components", {}).get("schemas", {}).items():
        if name in strict and schema.get("type") == "object":
            schema["additionalProperties"] = False
    return result


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
