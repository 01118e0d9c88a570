"""Object storage for datasets, checkpoints and adapters, shared by platform and workers.

Keys are slash-separated names (``files/file-abc``, ``jobs/ftjob-x/checkpoints/step-40.tar``).
Every write is atomic: readers see the old object or the complete new one, never a torn file,
so a worker killed mid-upload leaves no half checkpoint that a resumed attempt could load.
Directories travel as tar archives: one object per checkpoint keeps writes atomic on S3 too.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from workers import env


class StorageError(Exception):
    pass


class LocalStorage:
    """A folder on a local or shared filesystem (the embedded default)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        if not key or key.startswith("/") or ".." in key.split("/"):
            raise StorageError(f"invalid storage key {key!r}")
        return self.root / key

    def write_stream(self, key: str, stream: BinaryIO, *, max_bytes: int | None = None) -> int:
        """Copy a stream into ``key``; past ``max_bytes`` nothing is kept and StorageError rises."""
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        written = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := stream.read(1024 * 1024):
                    written += len(chunk)
                    if max_bytes is not None and written > max_bytes:
                        raise StorageError(f"object larger than {max_bytes} bytes")
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        return written

    def write_file(self, key: str, source: Path) -> int:
        with source.open("rb") as stream:
            return self.write_stream(key, stream)

    def write_bytes(self, key: str, data: bytes) -> int:
        import io

        return self.write_stream(key, io.BytesIO(data))

    @contextmanager
    def open(self, key: str) -> Iterator[BinaryIO]:
        path = self._path(key)
        if not path.is_file():
            raise StorageError(f"no object {key!r}")
        with path.open("rb") as stream:
            yield stream

    def download(self, key: str, destination: Path) -> Path:
        destination.parent.mkdir(parents=True, exist_ok=True)
        with self.open(key) as stream, destination.open("wb") as out:
            shutil.copyfileobj(stream, out, 1024 * 1024)
        return destination

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int:
        return self._path(key).stat().st_size

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def local_path(self, key: str) -> Path | None:
        """A path the caller may read directly, where the backend has one (lets Django stream)."""
        path = self._path(key)
        return path if path.is_file() else None

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


def default_storage() -> LocalStorage:
    root = env.storage_root()
    root.mkdir(parents=True, exist_ok=True)
    return LocalStorage(root)
