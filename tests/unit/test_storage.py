"""Both storage backends behave the same: the local folder and a real S3-compatible server."""

from __future__ import annotations

import io
import tarfile

import pytest

from tests.s3_server import s3_server
from workers.storage import LocalStorage, S3Storage, StorageError, storage_from_url


@pytest.fixture(scope="module")
def s3_endpoint():
    with s3_server("posttrain-test") as endpoint:
        yield endpoint


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return LocalStorage(tmp_path / "objects")
    endpoint = request.getfixturevalue("s3_endpoint")
    return S3Storage("posttrain-test", f"run-{tmp_path.name}", endpoint_url=endpoint)


def test_it_round_trips_bytes_and_reports_size(storage):
    storage.write_bytes("files/org-a/file-1", b"line one\nline two\n")
    assert storage.exists("files/org-a/file-1")
    assert storage.size("files/org-a/file-1") == 18
    assert storage.read_bytes("files/org-a/file-1") == b"line one\nline two\n"
    assert b"".join(storage.iter_chunks("files/org-a/file-1", chunk_size=4)) == (
        b"line one\nline two\n")


def test_a_missing_object_is_a_storage_error(storage):
    assert not storage.exists("files/nope")
    with pytest.raises(StorageError), storage.open("files/nope"):
        pass


def test_an_oversized_stream_leaves_no_object(storage):
    with pytest.raises(StorageError):
        storage.write_stream("files/big", io.BytesIO(b"x" * 5000), max_bytes=4096)
    assert not storage.exists("files/big")


def test_folders_travel_as_one_archive(storage, tmp_path):
    source = tmp_path / "checkpoint"
    source.mkdir()
    (source / "weights.bin").write_bytes(b"\x00\x01" * 1000)
    (source / "state.json").write_text('{"step": 3}')
    storage.upload_dir("jobs/ftjob-x/attempt-1/step-3.tar", source)
    with storage.open("jobs/ftjob-x/attempt-1/step-3.tar") as stream:
        names = tarfile.open(fileobj=io.BytesIO(stream.read())).getnames()
    assert sorted(names) == ["state.json", "weights.bin"]
    restored = storage.download_dir("jobs/ftjob-x/attempt-1/step-3.tar", tmp_path / "back")
    assert (restored / "weights.bin").read_bytes() == b"\x00\x01" * 1000


def test_delete_removes_and_is_idempotent(storage):
    storage.write_bytes("files/gone", b"x")
    storage.delete("files/gone")
    storage.delete("files/gone")
    assert not storage.exists("files/gone")


@pytest.mark.parametrize("key", ["", "/etc/passwd", "files/../../etc/passwd"])
def test_keys_cannot_escape_the_store(storage, key):
    with pytest.raises(StorageError):
        storage.write_bytes(key, b"x")


def test_the_url_chooses_the_backend(tmp_path, s3_endpoint, monkeypatch):
    monkeypatch.setenv("POSTTRAIN_S3_ENDPOINT_URL", s3_endpoint)
    assert isinstance(storage_from_url(str(tmp_path)), LocalStorage)
    assert isinstance(storage_from_url(f"file://{tmp_path}"), LocalStorage)
    bucket = storage_from_url("s3://posttrain-test/some/prefix")
    assert isinstance(bucket, S3Storage)
    assert (bucket.bucket, bucket.prefix) == ("posttrain-test", "some/prefix")


def test_objects_read_line_by_line_like_files(storage):
    lines = [b'{"row": %d, "pad": "%s"}\n' % (i, b"x" * (i * 37 % 2000)) for i in range(300)]
    storage.write_bytes("files/lines", b"".join(lines))
    with storage.open("files/lines") as stream:
        assert list(stream) == lines
    with storage.open("files/lines") as stream:
        assert stream.readline(10) == lines[0][:10]
