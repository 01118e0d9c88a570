"""Console fixtures: people signed in with a session, each a member of one organization."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from posttrain_server.files.services import file_validate
from posttrain_server.tenancy.models import Organization
from posttrain_server.tenancy.services import console_user_set, organization_get_or_create

PASSWORD = "correct horse battery staple"


@dataclass
class Person:
    organization: Organization
    username: str
    client: Client


def sign_in(org_name: str, username: str) -> Person:
    organization = organization_get_or_create(name=org_name)
    console_user_set(organization=organization, username=username, password=PASSWORD)
    client = Client()
    response = client.post("/login", {"username": username, "password": PASSWORD})
    assert response.status_code == 302, response.content[:300]
    return Person(organization, username, client)


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """PBKDF2's deliberate slowness costs a second per sign-in; tests need no such guard."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def isolated_storage(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTTRAIN_STORAGE_ROOT", str(tmp_path / "storage"))


@pytest.fixture
def carol(db) -> Person:
    return sign_in("carol-org", "carol")


@pytest.fixture
def dave(db) -> Person:
    return sign_in("dave-org", "dave")


def chat_jsonl(count: int = 12) -> bytes:
    rows = [{"messages": [{"role": "user", "content": f"What is {i} + {i}?"},
                          {"role": "assistant", "content": str(2 * i)}]}
            for i in range(count)]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def console_upload(person: Person, content: bytes, name: str = "train.jsonl", **extra):
    return person.client.post("/files/upload", {
        "purpose": "fine-tune",
        "file": SimpleUploadedFile(name, content, content_type="application/octet-stream")},
        **extra)


@pytest.fixture
def validated_file():
    """``validated_file(person, content=None)``: uploaded through the console, then checked
    by the validation task's body; returns the file id."""

    def make(person: Person, content: bytes | None = None) -> str:
        response = console_upload(person, content if content is not None else chat_jsonl(),
                                  HTTP_X_REQUESTED_WITH="XMLHttpRequest")
        assert response.status_code == 200, response.content
        file_id = response.json()["id"]
        file_validate(file_id=file_id)
        return file_id

    return make
