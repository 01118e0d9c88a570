"""What every resource holds: its client (sync or async), and the path quoting it needs."""

from __future__ import annotations

from typing import Generic, TypeVar
from urllib.parse import quote

from posttrain._base_client import AsyncAPIClient, SyncAPIClient

C = TypeVar("C", SyncAPIClient, AsyncAPIClient)


class Resource(Generic[C]):
    def __init__(self, client: C) -> None:
        self._client: C = client


def segment(value: str) -> str:
    """One path segment: model names hold ':' (kept) but never '/' or '?' (escaped)."""
    if not value:
        raise ValueError("an id must not be empty")
    return quote(value, safe=":")
