"""Races on PostgreSQL: concurrent terminal messages, concurrent idempotent creates.

Each worker thread has its own database connection, as parallel requests and platform
workers do; SQLite serializes every write transaction, so these need PostgreSQL.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections
from rest_framework.test import APIClient

from posttrain_server.api.errors import ApiError
from posttrain_server.billing.models import UsageRecord
from posttrain_server.jobs import services
from posttrain_server.jobs.models import Attempt, FineTuningJob, JobEvent
from posttrain_server.pools.services import pools_seed_defaults
from posttrain_server.tenancy.services import api_key_create, organization_get_or_create
from tests.unit.conftest import claim, create_job, processed_file
from workers import contract

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL (set DATABASE_URL=postgres://...): SQLite serializes every "
           "write transaction, so it cannot show a race")


def _finished(job_id: str, seq: int, status: str) -> contract.JobEvent:
    data = contract.FinishedData(status=status, trained_tokens=100, device_seconds=1.5)
    return contract.JobEvent(job_id=job_id, attempt=1, seq=seq, type="finished",
                             message=f"Attempt 1 finished: {status}",
                             data=data.model_dump(mode="json"), created_at=time.time())


@pytest.mark.parametrize("round_", range(5))
def test_fifty_concurrent_terminal_messages_leave_one_outcome_one_event_one_bill(
        transactional_db, round_):
    pools_seed_defaults()
    organization = organization_get_or_create(name=f"race-{round_}")
    job = create_job(organization, eval_samples=0)
    claim(job)

    def act(i: int) -> None:
        try:
            if i % 3 == 0:
                services.job_cancel(organization=organization, job_id=job.id)
            else:
                status = "succeeded" if i % 3 == 1 else "failed"
                services.event_apply(event=_finished(job.id, 1000 + i, status))
        except ApiError:
            pass  # a cancel after the end: refused, as it should be
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(act, range(50)))

    job.refresh_from_db()
    attempt = Attempt.objects.get(job=job, number=1)
    assert job.status in {"succeeded", "failed"}
    assert attempt.status == job.status
    outcomes = JobEvent.objects.filter(job=job, attempt__isnull=True,
                                       message__regex=r"^The job (has successfully|failed)")
    assert outcomes.count() == 1
    usage = UsageRecord.objects.filter(job=job)
    assert sorted(usage.values_list("kind", flat=True)) == ["device_seconds", "trained_tokens"]
    assert job.trained_tokens == 100
    assert job.cost_tokens + job.cost_compute > 0


def test_a_hundred_concurrent_creates_with_one_idempotency_key_make_one_job(
        transactional_db):
    pools_seed_defaults()
    organization = organization_get_or_create(name="idem-org")
    key = api_key_create(organization=organization).secret
    file = processed_file(organization)
    body = {"model": "posttrain-tiny", "training_file": file.id, "eval_samples": 0}

    def create(_: int) -> tuple[int, str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        try:
            response = client.post("/v1/fine_tuning/jobs", body, format="json",
                                   HTTP_IDEMPOTENCY_KEY="one-key")
            return response.status_code, response.json().get("id", "")
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(create, range(100)))

    assert {status for status, _ in results} == {200}
    assert len({job_id for _, job_id in results}) == 1
    assert FineTuningJob.objects.filter(organization=organization).count() == 1
    assert Attempt.objects.filter(job__organization=organization).count() == 1

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    other = client.post("/v1/fine_tuning/jobs", {**body, "seed": 5}, format="json",
                        HTTP_IDEMPOTENCY_KEY="one-key")
    assert other.status_code == 409
    assert other["x-should-retry"] == "false"

    # Keys are scoped per organization: the same key elsewhere is a different request.
    stranger = organization_get_or_create(name="idem-other")
    stranger_key = api_key_create(organization=stranger).secret
    stranger_file = processed_file(stranger)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {stranger_key}")
    theirs = client.post("/v1/fine_tuning/jobs", {**body, "training_file": stranger_file.id},
                         format="json", HTTP_IDEMPOTENCY_KEY="one-key")
    assert theirs.status_code == 200
    assert theirs.json()["id"] not in {job_id for _, job_id in results}
