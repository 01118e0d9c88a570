"""OpenAI-style cursor pagination: ``after=<id>&limit=N`` answering ``has_more``.

A cursor (an object id) stays correct while rows are added, unlike page numbers. Ordering is
``(created_at, id)`` so ties on the timestamp still give a total order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Q, QuerySet
from rest_framework.request import Request

from posttrain_server.api.errors import ApiError, NotFoundError

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def parse_limit(request: Request, default: int = DEFAULT_LIMIT) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    try:
        limit = int(raw)
    except ValueError:
        raise ApiError("limit must be an integer", param="limit") from None
    if not 1 <= limit <= MAX_LIMIT:
        raise ApiError(f"limit must be between 1 and {MAX_LIMIT}", param="limit")
    return limit


def paginate(request: Request, queryset: QuerySet, render: Callable[[Any], dict[str, Any]],
             *, newest_first: bool = True, default_limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    limit = parse_limit(request, default_limit)
    after = request.query_params.get("after")
    direction = "-" if newest_first else ""
    queryset = queryset.order_by(f"{direction}created_at", f"{direction}id")
    if after:
        # An id never holds NUL, and PostgreSQL cannot even compare text with one.
        anchor = (None if "\x00" in after else
                  queryset.filter(pk=after).values("created_at").first())
        if anchor is None:
            raise NotFoundError(f"No object with id {after!r} to page after", param="after")
        op = "lt" if newest_first else "gt"
        queryset = queryset.filter(
            Q(**{f"created_at__{op}": anchor["created_at"]})
            | Q(created_at=anchor["created_at"], **{f"id__{op}": after})
        )
    rows = list(queryset[: limit + 1])
    data = [render(row) for row in rows[:limit]]
    return {
        "object": "list",
        "data": data,
        "has_more": len(rows) > limit,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
