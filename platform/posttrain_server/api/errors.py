"""One renderer for every error: OpenAI's envelope ``{"error": {message, type, param, code}}``.

Clients written for OpenAI's API parse exactly this shape, so every 4xx and 5xx (from DRF,
from our services, from Django itself via the middleware) goes through ``error_response``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DataError
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """A business-rule refusal, raised by services and rendered by the handler.

    ``retryable=False`` adds ``x-should-retry: false`` so SDKs do not retry a 409 that
    retrying cannot fix.
    """

    status_code = 400
    error_type = "invalid_request_error"

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None,
                 status_code: int | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        if status_code is not None:
            self.status_code = status_code
        self.retryable = retryable


class NotFoundError(ApiError):
    status_code = 404


class ConflictError(ApiError):
    status_code = 409

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("retryable", False)
        super().__init__(message, **kwargs)


def error_body(message: str, *, type_: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def _type_for(status_code: int) -> str:
    if status_code == 401:
        return "invalid_request_error"
    if status_code == 403:
        return "permission_error"
    if status_code == 429:
        return "rate_limit_error"
    if status_code >= 500:
        return "server_error"
    return "invalid_request_error"


def first_validation_error(detail: Any, path: str = "") -> tuple[str | None, str]:
    """Flatten DRF's nested error dict to the first (param path, message)."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            sub = key if key == "non_field_errors" else (f"{path}.{key}" if path else str(key))
            param, message = first_validation_error(value, sub)
            return (None if key == "non_field_errors" else param), message
        return (path or None), "invalid request"
    if isinstance(detail, list) and detail:
        if all(isinstance(item, str | exceptions.ErrorDetail) for item in detail):
            return (path or None), str(detail[0])
        for index, item in enumerate(detail):
            if item:
                return first_validation_error(item, f"{path}[{index}]")
    return (path or None), str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApiError):
        headers = {}
        if exc.retryable is False:
            headers["x-should-retry"] = "false"
        body = error_body(exc.message, type_=exc.error_type if exc.status_code < 500 else
                          "server_error", param=exc.param, code=exc.code)
        return Response(body, status=exc.status_code, headers=headers)
    if isinstance(exc, DataError) and "NUL (0x00)" in str(exc):
        # PostgreSQL text cannot hold NUL: a NUL in an id, a filter or a body field is the
        # client's bad input (400), never a server error.
        from rest_framework.views import set_rollback  # a cycle at import time

        set_rollback()  # the failed statement broke any open transaction
        return Response(error_body("Strings must not contain NUL (\\u0000) characters",
                                   code="invalid_value"), status=400)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None  # the middleware renders it as a 500 envelope and logs it
    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))
    param = None
    if isinstance(exc, exceptions.ValidationError):
        param, message = first_validation_error(exc.detail)
        code = "invalid_value"
    else:
        message = str(exc.detail)
        code = exc.default_code
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        code = "invalid_api_key"
    body = error_body(message, type_=_type_for(exc.status_code), param=param, code=code)
    return Response(body, status=exc.status_code, headers=headers)


def json_error(status: int, message: str, code: str | None = None) -> JsonResponse:
    return JsonResponse(error_body(message, type_=_type_for(status), code=code), status=status)
