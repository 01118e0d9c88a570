"""Posttrain's Python SDK: ``from posttrain import Posttrain``.

Depends on httpx and pydantic only (never on Django or torch); the CLI (``posttrain``) adds
rich for tables and progress bars (``pip install 'posttrain[cli]'``).
"""

from posttrain._archive import UnsafeArchiveError
from posttrain._base_client import AsyncPager, SyncPager
from posttrain._client import AsyncPosttrain, Posttrain
from posttrain._exceptions import (
    APIConnectionError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    FileValidationError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PosttrainError,
    RateLimitError,
    RequestTimeoutError,
    UnprocessableEntityError,
    WaitTimeoutError,
)
from posttrain._version import __version__

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncPager",
    "AsyncPosttrain",
    "AuthenticationError",
    "BadRequestError",
    "ConfigurationError",
    "ConflictError",
    "FileValidationError",
    "InternalServerError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Posttrain",
    "PosttrainError",
    "RateLimitError",
    "RequestTimeoutError",
    "SyncPager",
    "UnprocessableEntityError",
    "UnsafeArchiveError",
    "WaitTimeoutError",
    "__version__",
]
