"""The one base client: configuration, retries, idempotency keys, error mapping, and I/O.

Everything an API call *means* is written once, as a *plan*: a generator that yields
``Request`` (send this, give me the parsed result), ``Sleep`` (wait before polling again) and
``Emit`` (hand this item to the caller), and finally returns its result. The sync client runs a
plan with ``httpx.Client`` and ``time.sleep``, the async client with ``httpx.AsyncClient`` and
``asyncio.sleep``; nothing else differs between them. Waiting for a file's validation, following
a job's events and paginating are therefore one implementation each, not two.

Retries (``max_retries``, 2 by default) cover connection errors, timeouts, 408, 429 and 5xx,
with exponential backoff and jitter, unless the server says otherwise: ``Retry-After`` (or
``retry-after-ms``) sets the delay, and ``x-should-retry: true|false`` overrides the status rule
(the server sends ``false`` on a 409 that retrying cannot fix). Every POST carries an
``Idempotency-Key``, generated once per call and reused by each of its retries, so a retried
create never creates twice.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import httpx
from pydantic import BaseModel, ValidationError

from posttrain._exceptions import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    ConfigurationError,
    status_error,
)
from posttrain._version import __version__
from posttrain.types import CursorPage

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0, write=600.0)
DEFAULT_MAX_RETRIES = 2
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
IDEMPOTENCY_HEADER = "Idempotency-Key"

R = TypeVar("R")


@dataclass(frozen=True)
class Request:
    """One API call a plan asks for; the client sends it (with retries) and parses the answer.

    ``cast``: a pydantic model class the JSON body is validated into (``None``: the JSON as is).
    ``upload``: ``(field, filename, path)``, a file sent as multipart, reopened on each retry.
    ``raw``: return the body as bytes. ``download_to``: stream the body to this path (written
    to a temporary file next to it and renamed, so a broken download leaves nothing behind).
    """

    method: str
    path: str
    cast: type[BaseModel] | None = None
    params: Mapping[str, Any] | None = None
    json: Any = None
    data: Mapping[str, str] | None = None
    upload: tuple[str, str, Path] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None
    raw: bool = False
    download_to: Path | None = None
    timeout: float | httpx.Timeout | None = None
    max_retries: int | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Emit:
    value: Any


Plan = Generator[Request | Sleep | Emit, Any, R]

class _Identified(Protocol):
    id: str


T = TypeVar("T", bound=_Identified)
# A list endpoint: the plan fetching the page after a cursor (None: the first page).
PagePlan = Callable[[str | None], Plan["CursorPage[T]"]]


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds or
    an HTTP date. None when absent or unparsable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


class BaseClient:
    """Configuration and every decision about a request; no I/O (see the subclasses)."""

    def __init__(self, *, api_key: str | None = None, base_url: str | httpx.URL | None = None,
                 timeout: float | httpx.Timeout | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES,
                 default_headers: Mapping[str, str] | None = None) -> None:
        api_key = api_key if api_key is not None else os.environ.get("POSTTRAIN_API_KEY")
        if not api_key:
            raise ConfigurationError(
                "No API key: pass api_key=... or set POSTTRAIN_API_KEY (create one with "
                "`python manage.py create_api_key --org NAME` on the server).")
        base_url = base_url or os.environ.get("POSTTRAIN_BASE_URL") or DEFAULT_BASE_URL
        url = httpx.URL(str(base_url))
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigurationError(f"base_url must be an http(s) URL, got {str(base_url)!r}")
        if max_retries < 0:
            raise ConfigurationError("max_retries must be 0 or more")
        self.api_key = api_key
        self.base_url = url
        self.timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
        self.max_retries = max_retries
        self._default_headers = dict(default_headers or {})

    # -- decisions shared by both clients ---------------------------------------------------

    def _prepare(self, request: Request) -> Request:
        """Fix the idempotency key of a POST once, before the first try, so retries reuse it."""
        if request.method.upper() == "POST" and request.idempotency_key is None:
            return replace(request, idempotency_key=f"posttrain-{uuid.uuid4()}")
        return request

    def _headers(self, request: Request) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.api_key}",
                   "User-Agent": f"posttrain-python/{__version__}",
                   "Accept": "application/json", **self._default_headers, **request.headers}
        if request.idempotency_key:
            headers[IDEMPOTENCY_HEADER] = request.idempotency_key
        return headers

    def _build(self, http: httpx.Client | httpx.AsyncClient, request: Request,
               files: ExitStack) -> httpx.Request:
        upload = None
        if request.upload is not None:
            name, filename, path = request.upload
            upload = {name: (filename, files.enter_context(Path(path).open("rb")))}
        return http.build_request(
            request.method, request.path.lstrip("/"), params=_clean(request.params),
            json=request.json, data=request.data, files=upload, headers=self._headers(request),
            timeout=request.timeout if request.timeout is not None else self.timeout)

    def _max_retries(self, request: Request) -> int:
        return self.max_retries if request.max_retries is None else request.max_retries

    @staticmethod
    def _should_retry(response: httpx.Response) -> bool:
        hint = response.headers.get("x-should-retry", "").lower()
        if hint == "true":
            return True
        if hint == "false":
            return False
        return response.status_code in (408, 429) or response.status_code >= 500

    @staticmethod
    def _retry_delay(retries_taken: int, response: httpx.Response | None) -> float:
        """``Retry-After`` when the server sent a sane one, else backoff with jitter."""
        if response is not None:
            after = _retry_after(response.headers)
            if after is not None and 0 <= after <= MAX_RETRY_AFTER:
                return float(after)
        delay: float = min(INITIAL_RETRY_DELAY * 2.0**retries_taken, MAX_RETRY_DELAY)
        return delay * (1 - 0.25 * random.random())  # jitter spreads out a thundering herd

    @staticmethod
    def _status_error(response: httpx.Response) -> APIStatusError:
        try:
            body: object = response.json()
        except ValueError:
            body = response.text
        return status_error(response, body)

    @staticmethod
    def _parse(request: Request, response: httpx.Response) -> Any:
        if request.raw:
            return response.content
        try:
            body = response.json()
        except ValueError as exc:
            raise APIResponseValidationError(
                f"{request.method} {request.path}: the response is not JSON",
                response=response, body=response.text) from exc
        if request.cast is None:
            return body
        try:
            return request.cast.model_validate(body)
        except ValidationError as exc:
            raise APIResponseValidationError(
                f"{request.method} {request.path}: unexpected response: {exc}",
                response=response, body=body) from exc


def _clean(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Drop None-valued query parameters (an omitted option is not ``?after=None``)."""
    if params is None:
        return None
    return {key: value for key, value in params.items() if value is not None}


def _partial_path(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(handle)
    return Path(name)


class SyncAPIClient(BaseClient):
    """Runs plans with ``httpx.Client``."""

    def __init__(self, *, http_client: httpx.Client | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._http = http_client or httpx.Client()
        self._http.base_url = self.base_url
        self._sleep: Callable[[float], None] = time.sleep

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SyncAPIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, request: Request, *, stream: bool = False) -> httpx.Response:
        max_retries = self._max_retries(request)
        retries = 0
        while True:
            response: httpx.Response | None = None
            with ExitStack() as files:
                built = self._build(self._http, request, files)
                try:
                    response = self._http.send(built, stream=stream)
                except httpx.TimeoutException as exc:
                    error: Exception = APITimeoutError(built)
                    cause: Exception = exc
                except httpx.TransportError as exc:
                    error, cause = APIConnectionError(built), exc
            if response is not None:
                if not response.is_error:
                    return response
                response.read()
                response.close()
                if retries < max_retries and self._should_retry(response):
                    self._sleep(self._retry_delay(retries, response))
                    retries += 1
                    continue
                raise self._status_error(response)
            if retries < max_retries:
                self._sleep(self._retry_delay(retries, None))
                retries += 1
                continue
            raise error from cause

    def _execute(self, request: Request) -> Any:
        request = self._prepare(request)
        if request.download_to is None:
            return self._parse(request, self._send(request))
        partial = _partial_path(request.download_to)
        try:
            response = self._send(request, stream=True)
            try:
                with partial.open("wb") as out:
                    for chunk in response.iter_bytes(1024 * 1024):
                        out.write(chunk)
            finally:
                response.close()
            partial.replace(request.download_to)
        finally:
            partial.unlink(missing_ok=True)
        return request.download_to

    def _iterate(self, plan: Plan[R]) -> Generator[Any, None, R]:
        value: Any = None
        try:
            while True:
                try:
                    action = plan.send(value)
                except StopIteration as stop:
                    return cast("R", stop.value)
                value = None
                if isinstance(action, Emit):
                    yield action.value
                elif isinstance(action, Sleep):
                    self._sleep(action.seconds)
                else:
                    value = self._execute(action)
        finally:
            plan.close()  # a failed request or an abandoned iterator runs the plan's cleanup

    def _run(self, plan: Plan[R]) -> R:
        steps = self._iterate(plan)
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                return cast("R", stop.value)


class AsyncAPIClient(BaseClient):
    """Runs the same plans with ``httpx.AsyncClient``."""

    def __init__(self, *, http_client: httpx.AsyncClient | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._http = http_client or httpx.AsyncClient()
        self._http.base_url = self.base_url
        self._sleep: Callable[[float], Any] = asyncio.sleep

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAPIClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(self, request: Request, *, stream: bool = False) -> httpx.Response:
        max_retries = self._max_retries(request)
        retries = 0
        while True:
            response: httpx.Response | None = None
            with ExitStack() as files:
                built = self._build(self._http, request, files)
                try:
                    response = await self._http.send(built, stream=stream)
                except httpx.TimeoutException as exc:
                    error: Exception = APITimeoutError(built)
                    cause: Exception = exc
                except httpx.TransportError as exc:
                    error, cause = APIConnectionError(built), exc
            if response is not None:
                if not response.is_error:
                    return response
                await response.aread()
                await response.aclose()
                if retries < max_retries and self._should_retry(response):
                    await self._sleep(self._retry_delay(retries, response))
                    retries += 1
                    continue
                raise self._status_error(response)
            if retries < max_retries:
                await self._sleep(self._retry_delay(retries, None))
                retries += 1
                continue
            raise error from cause

    async def _execute(self, request: Request) -> Any:
        request = self._prepare(request)
        if request.download_to is None:
            return self._parse(request, await self._send(request))
        partial = _partial_path(request.download_to)
        try:
            response = await self._send(request, stream=True)
            try:
                with partial.open("wb") as out:
                    async for chunk in response.aiter_bytes(1024 * 1024):
                        out.write(chunk)
            finally:
                await response.aclose()
            partial.replace(request.download_to)
        finally:
            partial.unlink(missing_ok=True)
        return request.download_to

    async def _iterate(self, plan: Plan[Any]) -> AsyncIterator[Any]:
        value: Any = None
        try:
            while True:
                try:
                    action = plan.send(value)
                except StopIteration:
                    return
                value = None
                if isinstance(action, Emit):
                    yield action.value
                elif isinstance(action, Sleep):
                    await self._sleep(action.seconds)
                else:
                    value = await self._execute(action)
        finally:
            plan.close()

    async def _run(self, plan: Plan[R]) -> R:
        value: Any = None
        try:
            while True:
                try:
                    action = plan.send(value)
                except StopIteration as stop:
                    return cast("R", stop.value)
                value = None
                if isinstance(action, Sleep):
                    await self._sleep(action.seconds)
                elif isinstance(action, Request):
                    value = await self._execute(action)
        finally:
            plan.close()


class SyncPager(Generic[T]):
    """Auto-paginating iterator over a list endpoint (``for item in client.files.list()``).

    The first page is fetched when the pager is made, so a bad request fails at the call; later
    pages are fetched as iteration reaches them, following ``after=<last_id>`` while
    ``has_more``.
    """

    def __init__(self, client: SyncAPIClient, plan: PagePlan[T]) -> None:
        self._client = client
        self._plan = plan
        self.first_page: CursorPage[T] = client._run(plan(None))

    @property
    def data(self) -> list[T]:
        return list(self.first_page.data)

    @property
    def has_more(self) -> bool:
        return self.first_page.has_more

    def pages(self) -> Iterator[CursorPage[T]]:
        page = self.first_page
        while True:
            yield page
            if not (page.has_more and page.data):
                return
            page = self._client._run(self._plan(page.data[-1].id))

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.data


class AsyncPager(Generic[T]):
    """``async for item in client.files.list()``; ``await pager.get_first_page()`` for one page."""

    def __init__(self, client: AsyncAPIClient, plan: PagePlan[T]) -> None:
        self._client = client
        self._plan = plan

    async def get_first_page(self) -> CursorPage[T]:
        return await self._client._run(self._plan(None))

    async def pages(self) -> AsyncIterator[CursorPage[T]]:
        page = await self.get_first_page()
        while True:
            yield page
            if not (page.has_more and page.data):
                return
            page = await self._client._run(self._plan(page.data[-1].id))

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.data:
                yield item
