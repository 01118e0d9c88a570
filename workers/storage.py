"""Object storage for datasets, checkpoints and adapters, shared by platform and workers.

Keys are slash-separated names (``files/org-x/file-abc``, ``jobs/ftjob-x/attempt-1/step-40.tar``).
Every write is atomic: readers see the old object or the complete new one, never a torn file,
so a worker killed mid-upload leaves no half checkpoint that a resumed attempt could load.
Directories travel as tar archives: one object per checkpoint keeps writes atomic on S3 too.

Two backends with one behaviour, chosen by ``POSTTRAIN_STORAGE_URL``: a local (or shared)
folder, the embedded default, and any S3-compatible service (``s3://bucket/prefix``; MinIO,
Ceph, AWS). Backends implement five primitives; everything else is built on them here.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

from workers import env


class StorageError(Exception):
    pass


def check_key(key: str) -> str:
    if not key or key.startswith("/") or ".." in key.split("/"):
        raise StorageError(f"invalid storage key {key!r}")
    return key


class _CappedReader:
    """Wraps a stream; raises StorageError once more than ``limit`` bytes were read."""

    def __init__(self, stream: BinaryIO, limit: int | None) -> None:
        self.stream, self.limit, self.count = stream, limit, 0

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size)
        self.count += len(chunk)
        if self.limit is not None and self.count > self.limit:
            raise StorageError(f"object larger than {self.limit} bytes")
        return chunk


class _RawBody(io.RawIOBase):
    """A streaming HTTP body as a raw stream, so ``io.BufferedReader`` gives it real file
    semantics (``readline``, line iteration): botocore's body iterates in fixed-size chunks."""

    def __init__(self, body: Any) -> None:
        self.body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.body.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.body.close()
        super().close()


class Storage:
    """Shared behaviour; subclasses provide write_stream, open, exists, size, delete."""

    def write_stream(self, key: str, stream: BinaryIO, *, max_bytes: int | None = None) -> int:
        raise NotImplementedError

    def open(self, key: str) -> AbstractContextManager[BinaryIO]:
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def size(self, key: str) -> int:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def local_path(self, key: str) -> Path | None:
        """A path the caller may read directly, where the backend has one (lets Django stream)."""
        return None

    def write_file(self, key: str, source: Path) -> int:
        with source.open("rb") as stream:
            return self.write_stream(key, stream)

    def write_bytes(self, key: str, data: bytes) -> int:
        return self.write_stream(key, io.BytesIO(data))

    def read_bytes(self, key: str) -> bytes:
        with self.open(key) as stream:
            return stream.read()

    def download(self, key: str, destination: Path) -> Path:
        destination.parent.mkdir(parents=True, exist_ok=True)
        with self.open(key) as stream, destination.open("wb") as out:
            shutil.copyfileobj(stream, out, 1024 * 1024)
        return destination

    def upload_dir(self, key: str, directory: Path) -> int:
        """Archive a folder (a checkpoint, an adapter) into one object, atomically."""
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / "archive.tar"
            with tarfile.open(archive, "w") as tar:
                for item in sorted(directory.iterdir()):
                    tar.add(item, arcname=item.name)
            return self.write_file(key, archive)

    def download_dir(self, key: str, destination: Path) -> Path:
        destination.mkdir(parents=True, exist_ok=True)
        with self.open(key) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            tar.extractall(destination, filter="data")
        return destination

    def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024) -> Iterator[bytes]:
        """Stream an object in pieces (HTTP downloads of any size in constant memory)."""
        with self.open(key) as stream:
            while chunk := stream.read(chunk_size):
                yield chunk


class LocalStorage(Storage):
    """A folder on a local or shared filesystem (the embedded default)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"LocalStorage({self.root})"

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def write_stream(self, key: str, stream: BinaryIO, *, max_bytes: int | None = None) -> int:
        """Copy a stream into ``key``; past ``max_bytes`` nothing is kept and StorageError rises."""
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        reader = _CappedReader(stream, max_bytes)
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := reader.read(1024 * 1024):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        return reader.count

    @contextmanager
    def open(self, key: str) -> Iterator[BinaryIO]:
        path = self._path(key)
        if not path.is_file():
            raise StorageError(f"no object {key!r}")
        with path.open("rb") as stream:
            yield stream

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int:
        return self._path(key).stat().st_size

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def local_path(self, key: str) -> Path | None:
        path = self._path(key)
        return path if path.is_file() else None


class S3Storage(Storage):
    """An S3-compatible bucket. A PUT is atomic, so no temporary names are needed."""

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None) -> None:
        import boto3
        from botocore.config import Config

        self.bucket, self.prefix = bucket, prefix.strip("/")
        self.client = boto3.client(
            "s3", endpoint_url=endpoint_url,
            config=Config(retries={"max_attempts": 5, "mode": "standard"},
                          s3={"addressing_style": "path"}))

    def __repr__(self) -> str:
        return f"S3Storage(s3://{self.bucket}/{self.prefix})"

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _missing(self, error: Exception) -> bool:
        code = getattr(error, "response", {}).get("Error", {}).get("Code")
        return code in {"404", "NoSuchKey", "NotFound"}

    def write_stream(self, key: str, stream: BinaryIO, *, max_bytes: int | None = None) -> int:
        reader = _CappedReader(stream, max_bytes)
        # An exception while reading aborts the (multipart) upload: nothing becomes visible.
        self.client.upload_fileobj(reader, self.bucket, self._key(key))
        return reader.count

    @contextmanager
    def open(self, key: str) -> Iterator[BinaryIO]:
        from botocore.exceptions import ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
        except ClientError as exc:
            if self._missing(exc):
                raise StorageError(f"no object {key!r}") from exc
            raise
        with io.BufferedReader(_RawBody(body), buffer_size=1024 * 1024) as stream:
            yield stream

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if self._missing(exc):
                return False
            raise
        return True

    def size(self, key: str) -> int:
        head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        return int(head["ContentLength"])

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))


def storage_from_url(url: str) -> Storage:
    """``file:///abs/path`` or a bare path: a folder; ``s3://bucket/prefix``: a bucket."""
    parsed = urlparse(url)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise env.ConfigError(f"POSTTRAIN_STORAGE_URL={url!r} names no bucket")
        endpoint = env.env_str("POSTTRAIN_S3_ENDPOINT_URL", "") or None
        return S3Storage(parsed.netloc, parsed.path, endpoint_url=endpoint)
    if parsed.scheme in {"", "file"}:
        root = Path(parsed.path if parsed.scheme else url)
        root.mkdir(parents=True, exist_ok=True)
        return LocalStorage(root)
    raise env.ConfigError(f"POSTTRAIN_STORAGE_URL={url!r}: use file:// or s3://")


@functools.cache
def _storage_for(url: str) -> Storage:
    return storage_from_url(url)


def default_storage() -> Storage:
    """The configured storage (one client per process and URL)."""
    url = env.env_str("POSTTRAIN_STORAGE_URL", "") or str(env.storage_root())
    return _storage_for(url)
