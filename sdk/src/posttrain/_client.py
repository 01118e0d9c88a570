"""``Posttrain`` and ``AsyncPosttrain``: the base client plus its resources."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from posttrain._base_client import DEFAULT_MAX_RETRIES, AsyncAPIClient, SyncAPIClient
from posttrain.resources import (
    AsyncFiles,
    AsyncFineTuning,
    AsyncModels,
    AsyncOrganization,
    Files,
    FineTuning,
    Models,
    Organization,
)


class Posttrain(SyncAPIClient):
    """The synchronous client.

    ``api_key`` defaults to ``POSTTRAIN_API_KEY``; ``base_url`` to ``POSTTRAIN_BASE_URL``, else
    ``http://127.0.0.1:8000/v1``. ``max_retries`` (2) retries connection errors, timeouts, 408,
    429 and 5xx. ``http_client`` lets you pass your own ``httpx.Client`` (proxies, a transport).
    """

    def __init__(self, *, api_key: str | None = None, base_url: str | httpx.URL | None = None,
                 timeout: float | httpx.Timeout | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 default_headers: Mapping[str, str] | None = None,
                 http_client: httpx.Client | None = None) -> None:
        super().__init__(api_key=api_key, base_url=base_url, timeout=timeout,
                         max_retries=max_retries, default_headers=default_headers,
                         http_client=http_client)
        self.files = Files(self)
        self.fine_tuning = FineTuning(self)
        self.models = Models(self)
        self.organization = Organization(self)

    def __enter__(self) -> Posttrain:
        return self


class AsyncPosttrain(AsyncAPIClient):
    """The asynchronous client: the same resources and methods, awaited."""

    def __init__(self, *, api_key: str | None = None, base_url: str | httpx.URL | None = None,
                 timeout: float | httpx.Timeout | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 default_headers: Mapping[str, str] | None = None,
                 http_client: httpx.AsyncClient | None = None) -> None:
        super().__init__(api_key=api_key, base_url=base_url, timeout=timeout,
                         max_retries=max_retries, default_headers=default_headers,
                         http_client=http_client)
        self.files = AsyncFiles(self)
        self.fine_tuning = AsyncFineTuning(self)
        self.models = AsyncModels(self)
        self.organization = AsyncOrganization(self)

    async def __aenter__(self) -> AsyncPosttrain:
        return self


__all__ = ["AsyncPosttrain", "Posttrain"]
