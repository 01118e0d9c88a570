"""Keeps API routes speaking JSON even when Django, not DRF, produces the response."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from posttrain_server import metrics
from posttrain_server.api.errors import json_error
from workers import logcontext

logger = logging.getLogger("posttrain.api")

API_PREFIXES = ("/v1/", "/internal/")


class RequestContextMiddleware:
    """Gives every request an id (the caller's ``X-Request-ID`` if sane, else a new one),
    returns it as ``x-request-id`` and stamps it, and the job id, on every log record.
    Request latency is observed here for the metrics endpoint."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get("X-Request-ID", "")
        rid = incoming if 0 < len(incoming) <= 64 and incoming.isascii() else (
            f"req_{uuid.uuid4().hex}")
        request_token = logcontext.request_id.set(rid)
        job_token = logcontext.job_id.set(None)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            logcontext.request_id.reset(request_token)
            logcontext.job_id.reset(job_token)
        metrics.observe_request(request, response.status_code, time.perf_counter() - started)
        response["x-request-id"] = rid
        return response

    def process_view(self, request: HttpRequest, view_func: object, view_args: object,
                     view_kwargs: dict) -> None:
        if view_kwargs.get("job_id"):
            logcontext.job_id.set(view_kwargs["job_id"])


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
