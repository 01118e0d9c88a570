"""Template context for every console page: the organizations one can switch between."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from posttrain_server.console.access import request_organizations


def organizations(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"console_organizations": request_organizations(request)}
