"""Every error the SDK raises, one class per HTTP status, all under ``PosttrainError``.

A caller catches what it can act on (``NotFoundError``, ``RateLimitError``) and reports the
rest with ``request_id``, which the server logs too, so a bug report points at one request.
The error fields are OpenAI's envelope ``{"error": {message, type, param, code}}``.
"""

from __future__ import annotations

from typing import Any

import httpx

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "FileValidationError",
    "InternalServerError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PosttrainError",
    "RateLimitError",
    "RequestTimeoutError",
    "UnprocessableEntityError",
    "WaitTimeoutError",
]


class PosttrainError(Exception):
    """Base class of everything this package raises."""


class ConfigurationError(PosttrainError):
    """The client cannot be built as configured (no API key, a malformed base URL)."""


class WaitTimeoutError(PosttrainError, TimeoutError):
    """A ``wait`` gave up before the file or job reached the state it waited for."""


class APIError(PosttrainError):
    """A request failed; ``message``, ``type``, ``param`` and ``code`` as the server sent them."""

    def __init__(self, message: str, request: httpx.Request, *, body: object | None = None
                 ) -> None:
        super().__init__(message)
        self.message = message
        self.request = request
        self.body = body
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.type: str | None = error.get("type")
        self.param: str | None = error.get("param")
        self.code: str | None = error.get("code")


class APIConnectionError(APIError):
    """The server could not be reached, or the connection broke (retried before it is raised)."""

    def __init__(self, request: httpx.Request, message: str = "Connection error.") -> None:
        super().__init__(message, request)


class APITimeoutError(APIConnectionError):
    """The request timed out (retried before it is raised)."""

    def __init__(self, request: httpx.Request) -> None:
        super().__init__(request, "Request timed out.")


class APIResponseValidationError(APIError):
    """The server answered 2xx with a body this SDK's types cannot read (a server newer or
    older than the SDK); ``body`` holds the raw JSON, ``request_id`` names the request."""

    def __init__(self, message: str, *, response: httpx.Response, body: object) -> None:
        super().__init__(message, response.request, body=body)
        self.response = response
        self.status_code = response.status_code
        self.request_id: str | None = response.headers.get("x-request-id")


class APIStatusError(APIError):
    """The server answered 4xx or 5xx; subclasses name the status."""

    status_code: int

    def __init__(self, message: str, *, response: httpx.Response, body: object | None) -> None:
        super().__init__(message, response.request, body=body)
        self.response = response
        self.status_code = response.status_code
        self.request_id: str | None = response.headers.get("x-request-id")

    def __str__(self) -> str:
        parts = [f"{self.status_code}"]
        if self.code:
            parts.append(self.code)
        text = f"{' '.join(parts)}: {self.message}"
        if self.param:
            text += f" (param: {self.param})"
        if self.request_id:
            text += f" [request id {self.request_id}]"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The error as the CLI prints it with ``--json``."""
        return {"error": {"status": self.status_code, "message": self.message,
                          "type": self.type, "param": self.param, "code": self.code,
                          "request_id": self.request_id}}


class BadRequestError(APIStatusError):
    status_code = 400


class AuthenticationError(APIStatusError):
    status_code = 401


class PermissionDeniedError(APIStatusError):
    status_code = 403


class NotFoundError(APIStatusError):
    status_code = 404


class RequestTimeoutError(APIStatusError):
    status_code = 408


class ConflictError(APIStatusError):
    status_code = 409


class PayloadTooLargeError(APIStatusError):
    status_code = 413


class UnprocessableEntityError(APIStatusError):
    status_code = 422


class RateLimitError(APIStatusError):
    status_code = 429


class InternalServerError(APIStatusError):
    """Any 5xx."""


STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 408: RequestTimeoutError, 409: ConflictError,
    413: PayloadTooLargeError, 422: UnprocessableEntityError, 429: RateLimitError,
}


def status_error(response: httpx.Response, body: object | None) -> APIStatusError:
    """The exception for a 4xx/5xx response: its class by status, its message from the body."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        message = error["message"]
    elif isinstance(body, str) and body:
        message = body[:500]
    else:
        message = f"HTTP {response.status_code}"
    if response.status_code >= 500:
        cls: type[APIStatusError] = InternalServerError
    else:
        cls = STATUS_ERRORS.get(response.status_code, APIStatusError)
    return cls(message, response=response, body=body)


class FileValidationError(PosttrainError):
    """An uploaded (or locally checked) dataset broke the rules; ``errors`` name the lines.

    ``errors`` is a list of ``{"line": int | None, "message": str}`` (the first 20);
    ``error_count`` counts them all. ``file`` is the server's file object when there is one.
    """

    def __init__(self, message: str, *, errors: list[dict[str, Any]], error_count: int,
                 file: Any = None) -> None:
        super().__init__(message)
        self.errors = errors
        self.error_count = error_count
        self.file = file

    def __str__(self) -> str:
        lines = [str(self.args[0])]
        for error in self.errors:
            where = f"line {error['line']}: " if error.get("line") else ""
            lines.append(f"  {where}{error['message']}")
        if self.error_count > len(self.errors):
            lines.append(f"  ... and {self.error_count - len(self.errors)} more")
        return "\n".join(lines)
