"""API-test helpers: uploads through the real endpoint, validation through the task's body."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from posttrain_server.files.services import file_validate


@pytest.fixture(autouse=True)
def isolated_storage(tmp_path, monkeypatch):
    """Uploaded objects go to this test's own folder, never to a shared var/."""
    root = tmp_path / "storage"
    monkeypatch.setenv("POSTTRAIN_STORAGE_ROOT", str(root))
    return root


def chat_jsonl(count: int = 12) -> bytes:
    rows = [{"messages": [{"role": "user", "content": f"What is {i} + {i}?"},
                          {"role": "assistant", "content": str(2 * i)}]}
            for i in range(count)]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def upload(client, content: bytes | None = None, *, filename: str = "train.jsonl",
           purpose: str | None = "fine-tune", **extra):
    data = {}
    if content is not None:
        data["file"] = SimpleUploadedFile(filename, content,
                                          content_type="application/octet-stream")
    if purpose is not None:
        data["purpose"] = purpose
    return client.post("/v1/files", data, format="multipart", **extra)


@pytest.fixture
def jsonl():
    """``jsonl(count)``: a valid chat dataset of ``count`` examples."""
    return chat_jsonl


@pytest.fixture
def upload_file():
    """``upload_file(client, content, filename=..., purpose=..., headers=...)``: the response."""
    return upload


@pytest.fixture
def processed_file():
    """``processed_file(tenant, count=12)``: the id of an uploaded and validated file."""

    def make(tenant, count: int = 12, content: bytes | None = None) -> str:
        response = upload(tenant.client, content if content is not None else chat_jsonl(count))
        assert response.status_code == 200, response.json()
        file = file_validate(file_id=response.json()["id"])
        assert file is not None
        return file.id

    return make
