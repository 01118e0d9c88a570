"""Keeps API routes speaking JSON even when Django, not DRF, produces the response."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from posttrain_server.api.errors import json_error

logger = logging.getLogger("posttrain.api")

API_PREFIXES = ("/v1/", "/internal/")


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIXES):
            return response
        if response.status_code >= 400 and "json" not in response.get("Content-Type", ""):
            messages = {404: "Unknown route", 405: "Method not allowed",
                        413: "Request body too large", 400: "Bad request"}
            message = messages.get(response.status_code, "Request failed")
            return json_error(response.status_code, f"{message}: {request.method} {request.path}")
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIXES):
            return None
        logger.exception("unhandled error on %s %s", request.method, request.path)
        return json_error(500, "The server had an error processing your request.", "server_error")
