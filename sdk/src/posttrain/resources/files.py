"""``client.files``: upload (and wait for validation), list, retrieve, delete, content."""

from __future__ import annotations

import os
import time
from pathlib import Path

from posttrain._base_client import (
    AsyncAPIClient,
    AsyncPager,
    PagePlan,
    Plan,
    Request,
    Sleep,
    SyncAPIClient,
    SyncPager,
)
from posttrain._exceptions import FileValidationError, WaitTimeoutError
from posttrain.resources._resource import Resource, segment
from posttrain.types import CursorPage, FileDeleted, FileObject

PathLike = str | os.PathLike[str]


def validation_error(file: FileObject) -> FileValidationError:
    report = file.validation
    errors = [issue.model_dump() for issue in report.errors] if report else []
    count = report.error_count if report else 0
    count = count or len(errors)
    detail = (f"{count} error(s)" if errors else file.status_details) or "invalid"
    return FileValidationError(f"{file.filename} ({file.id}) failed validation: {detail}",
                               errors=errors, error_count=count, file=file)


def wait_plan(file_id: str, *, poll_interval: float, timeout: float) -> Plan[FileObject]:
    """Poll until the file leaves ``uploaded``; raise with the line-numbered errors on ``error``."""
    deadline = time.monotonic() + timeout
    file: FileObject = yield Request("GET", f"/files/{segment(file_id)}", cast=FileObject)
    while file.status == "uploaded":
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(f"{file_id} was still being validated after {timeout:g}s")
        yield Sleep(poll_interval)
        file = yield Request("GET", f"/files/{segment(file_id)}", cast=FileObject)
    if file.status == "error":
        raise validation_error(file)
    return file


def upload_plan(path: PathLike, *, purpose: str, wait: bool, poll_interval: float,
                timeout: float, idempotency_key: str | None) -> Plan[FileObject]:
    source = Path(path)
    if not source.is_file():
        raise FileNotFoundError(f"no such file: {source}")
    file: FileObject = yield Request("POST", "/files", cast=FileObject,
                                     data={"purpose": purpose},
                                     upload=("file", source.name, source),
                                     idempotency_key=idempotency_key)
    if not wait:
        return file
    return (yield from wait_plan(file.id, poll_interval=poll_interval, timeout=timeout))


def list_plan(purpose: str | None, limit: int | None) -> PagePlan[FileObject]:
    def page(after: str | None) -> Plan[CursorPage[FileObject]]:
        result: CursorPage[FileObject] = yield Request(
            "GET", "/files", cast=CursorPage[FileObject],
            params={"after": after, "limit": limit, "purpose": purpose})
        return result
    return page


def retrieve_plan(file_id: str) -> Plan[FileObject]:
    result: FileObject = yield Request("GET", f"/files/{segment(file_id)}", cast=FileObject)
    return result


def delete_plan(file_id: str) -> Plan[FileDeleted]:
    result: FileDeleted = yield Request("DELETE", f"/files/{segment(file_id)}", cast=FileDeleted)
    return result


def content_plan(file_id: str) -> Plan[bytes]:
    result: bytes = yield Request("GET", f"/files/{segment(file_id)}/content", raw=True)
    return result


def download_plan(file_id: str, path: PathLike) -> Plan[Path]:
    result: Path = yield Request("GET", f"/files/{segment(file_id)}/content",
                                 download_to=Path(path))
    return result


class Files(Resource[SyncAPIClient]):
    def upload(self, path: PathLike, *, purpose: str = "fine-tune", wait: bool = True,
               poll_interval: float = 0.5, timeout: float = 600.0,
               idempotency_key: str | None = None) -> FileObject:
        """Upload a JSONL dataset; by default wait until the server has validated it.

        Raises ``FileValidationError`` (with ``errors``: line numbers and messages) when the
        file is refused, so a script fails at the upload rather than at the job.
        """
        return self._client._run(upload_plan(path, purpose=purpose, wait=wait,
                                             poll_interval=poll_interval, timeout=timeout,
                                             idempotency_key=idempotency_key))

    def wait(self, file_id: str, *, poll_interval: float = 0.5,
             timeout: float = 600.0) -> FileObject:
        return self._client._run(wait_plan(file_id, poll_interval=poll_interval,
                                           timeout=timeout))

    def list(self, *, purpose: str | None = None, limit: int | None = None
             ) -> SyncPager[FileObject]:
        return SyncPager(self._client, list_plan(purpose, limit))

    def retrieve(self, file_id: str) -> FileObject:
        return self._client._run(retrieve_plan(file_id))

    def delete(self, file_id: str) -> FileDeleted:
        return self._client._run(delete_plan(file_id))

    def content(self, file_id: str) -> bytes:
        return self._client._run(content_plan(file_id))

    def download(self, file_id: str, path: PathLike) -> Path:
        """Stream a file's content to ``path`` (atomically: all of it or nothing)."""
        return self._client._run(download_plan(file_id, path))


class AsyncFiles(Resource[AsyncAPIClient]):
    async def upload(self, path: PathLike, *, purpose: str = "fine-tune", wait: bool = True,
                     poll_interval: float = 0.5, timeout: float = 600.0,
                     idempotency_key: str | None = None) -> FileObject:
        return await self._client._run(upload_plan(path, purpose=purpose, wait=wait,
                                                   poll_interval=poll_interval,
                                                   timeout=timeout,
                                                   idempotency_key=idempotency_key))

    async def wait(self, file_id: str, *, poll_interval: float = 0.5,
                   timeout: float = 600.0) -> FileObject:
        return await self._client._run(wait_plan(file_id, poll_interval=poll_interval,
                                                 timeout=timeout))

    def list(self, *, purpose: str | None = None, limit: int | None = None
             ) -> AsyncPager[FileObject]:
        return AsyncPager(self._client, list_plan(purpose, limit))

    async def retrieve(self, file_id: str) -> FileObject:
        return await self._client._run(retrieve_plan(file_id))

    async def delete(self, file_id: str) -> FileDeleted:
        return await self._client._run(delete_plan(file_id))

    async def content(self, file_id: str) -> bytes:
        return await self._client._run(content_plan(file_id))

    async def download(self, file_id: str, path: PathLike) -> Path:
        return await self._client._run(download_plan(file_id, path))
