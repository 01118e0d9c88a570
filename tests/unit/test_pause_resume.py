"""Pause, resume and max_cost on the platform side: statuses, attempts, bills, refusals."""

from __future__ import annotations

import time
from decimal import Decimal

from posttrain_server.jobs.models import Attempt, Checkpoint, FineTuningJob
from posttrain_server.jobs.services import attempt_heartbeat, event_apply
from workers import contract


def paused_event(job, *, attempt: int = 1, reason: str = "paused", tokens: int = 1_000,
                 seconds: float = 36.0) -> contract.JobEvent:
    error = ({"code": "max_cost_reached", "param": "max_cost", "message": "Paused at step 4"}
             if reason == "budget" else None)
    data = contract.FinishedData(status="paused", stop_reason=reason, error=error,
                                 trained_tokens=tokens, device_seconds=seconds, steps=4)
    return contract.JobEvent(job_id=job.id, attempt=attempt, seq=99, type="finished",
                             message="stopped", data=data.model_dump(), created_at=time.time())


def url(job, action: str) -> str:
    return f"/v1/fine_tuning/jobs/{job.id}/{action}"


def test_pausing_a_queued_job_withdraws_its_attempt_at_once(alice, make_job):
    job = make_job(alice.organization)

    body = alice.client.post(url(job, "pause")).json()

    assert body["status"] == "paused"
    assert Attempt.objects.get(job=job).status == "cancelled"
    assert alice.client.post(url(job, "pause")).json()["status"] == "paused"  # idempotent


def test_a_running_job_is_asked_to_pause_through_its_heartbeat(alice, make_job, claim_attempt):
    job = make_job(alice.organization)
    claim_attempt(job)
    token = f"test-token-{job.id}-1"
    attempt = Attempt.objects.get(job=job)
    assert attempt_heartbeat(attempt_id=attempt.id, token=token)["pause_requested"] is False

    assert alice.client.post(url(job, "pause")).json()["status"] == "pausing"

    assert attempt_heartbeat(attempt_id=attempt.id, token=token)["pause_requested"] is True


def test_the_workers_paused_result_bills_what_ran_and_keeps_the_checkpoint(
        alice, make_job, claim_attempt):
    job = make_job(alice.organization)
    claim_attempt(job)
    alice.client.post(url(job, "pause"))

    assert event_apply(event=paused_event(job))

    job.refresh_from_db()
    assert job.status == "paused"
    assert job.error is None
    assert job.trained_tokens == 1_000
    assert job.cost_tokens == Decimal("0.000100") and job.cost_compute == Decimal("0.001000")
    assert Attempt.objects.get(job=job).status == "paused"


def test_a_job_at_its_max_cost_is_paused_with_the_reason_and_resumes_only_when_raised(
        alice, make_job, claim_attempt):
    job = make_job(alice.organization, max_cost="0.0011")
    assert job.max_cost == Decimal("0.0011")
    claim_attempt(job)
    Checkpoint.objects.create(job=job, attempt=1, step=4, storage_key="jobs/x/step-4.tar",
                              trained_tokens=1_000)

    event_apply(event=paused_event(job, reason="budget"))
    job.refresh_from_db()
    assert job.status == "paused"
    assert job.error["code"] == "max_cost_reached"

    refused = alice.client.post(url(job, "resume"), {}, format="json")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "max_cost_reached"
    job.refresh_from_db()
    assert job.status == "paused" and job.max_cost == Decimal("0.0011")  # nothing half-done

    resumed = alice.client.post(url(job, "resume"), {"max_cost": "0.5"}, format="json").json()

    assert resumed["status"] == "queued" and resumed["error"] is None
    assert resumed["max_cost"] == "0.500000"
    retry = Attempt.objects.get(job=job, number=2)
    assert retry.status == "dispatched"
    assert retry.resume_from_key == "jobs/x/step-4.tar" and retry.resume_trained_tokens == 1_000


def test_the_resumed_attempt_carries_the_budget_and_what_was_spent_before(
        alice, make_job, claim_attempt):
    from posttrain_server.jobs.dispatch import train_message

    job = make_job(alice.organization, max_cost="2")
    claim_attempt(job)
    alice.client.post(url(job, "pause"))
    event_apply(event=paused_event(job))
    alice.client.post(url(job, "resume"))

    job.refresh_from_db()
    message = train_message(job, Attempt.objects.get(job=job, number=2), "token")

    assert message.budget is not None
    assert Decimal(message.budget.max_cost) == 2
    assert Decimal(message.budget.spent_before) == Decimal("0.001100")
    assert message.budget.reached(tokens=0, seconds=0) is False
    assert message.budget.reached(tokens=20_000_000, seconds=0) is True  # $2 of tokens


def test_only_a_paused_job_resumes_and_a_finished_one_cannot_pause(alice, make_job):
    job = make_job(alice.organization)

    assert alice.client.post(url(job, "resume")).json()["error"]["code"] == "job_not_paused"
    FineTuningJob.objects.filter(id=job.id).update(status="succeeded")
    response = alice.client.post(url(job, "pause"))
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "job_not_pausable"


def test_a_bad_max_cost_is_refused_by_name(alice, make_job):
    from tests.unit.conftest import processed_file

    file = processed_file(alice.organization)
    response = alice.client.post("/v1/fine_tuning/jobs", {
        "model": "posttrain-tiny", "training_file": file.id, "max_cost": "-1"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "max_cost"
