"""Unit-test helpers: jobs written through the services, attempts claimed through the lease."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

import pytest
from django.utils import timezone

from posttrain_server.files.models import File, FileStatus
from posttrain_server.jobs import services
from posttrain_server.jobs.models import Attempt, FineTuningJob
from posttrain_server.tenancy.models import Organization
from workers.storage import default_storage


@pytest.fixture(autouse=True)
def isolated_storage(tmp_path, monkeypatch):
    """Objects (result files) go to this test's own folder, never to a shared var/."""
    monkeypatch.setenv("POSTTRAIN_STORAGE_ROOT", str(tmp_path / "storage"))


def chat_rows(count: int) -> bytes:
    rows = [{"messages": [{"role": "user", "content": f"{i}+{i}="},
                          {"role": "assistant", "content": str(2 * i)}]} for i in range(count)]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def processed_file(organization: Organization, *, example_count: int = 20) -> File:
    """A validated chat file whose content is in storage (quotes count its tokens)."""
    content = chat_rows(example_count)
    file = File(organization=organization, filename="train.jsonl", purpose="fine-tune",
                bytes=len(content), status=FileStatus.PROCESSED,
                validation={"format": "chat", "line_count": example_count,
                            "example_count": example_count, "error_count": 0, "errors": []})
    file.storage_key = f"files/{organization.id}/{file.id}"
    default_storage().write_bytes(file.storage_key, content)
    file.save(force_insert=True)
    return file


def create_job(organization: Organization, **data) -> FineTuningJob:
    """A queued job with its first (dispatched) attempt, written by ``job_create``."""
    file = processed_file(organization)
    request = {"model": "posttrain-tiny", "training_file": file.id, **data}
    return services.job_create(organization=organization, data=request)


def claim(job: FineTuningJob, *, number: int = 1, claimed_at: datetime | None = None,
          heartbeat_at: datetime | None = None, reported_tokens: int = 0) -> Attempt:
    """Claim attempt ``number`` through ``attempt_claim`` (the real lease), then date it."""
    token = f"test-token-{job.id}-{number}"
    attempt = Attempt.objects.get(job=job, number=number)
    Attempt.objects.filter(id=attempt.id).update(
        token_hash=hashlib.sha256(token.encode()).hexdigest())
    assert services.attempt_claim(attempt_id=attempt.id, token=token, worker="worker-1")
    now = timezone.now()
    Attempt.objects.filter(id=attempt.id).update(
        claimed_at=claimed_at or now, heartbeat_at=heartbeat_at or now,
        reported_tokens=reported_tokens)
    attempt.refresh_from_db()
    return attempt


@pytest.fixture
def make_job(db):
    """``make_job(organization, **request)``: a queued job written by ``job_create``."""
    return create_job


@pytest.fixture
def claim_attempt(db):
    """``claim_attempt(job, number=1, claimed_at=..., heartbeat_at=..., reported_tokens=...)``."""
    return claim
