"""A worker killed mid-training: the reaper re-queues the job and a new worker resumes it."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from posttrain_server.billing.models import UsageRecord

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_killed_worker_is_reaped_and_the_job_resumes_from_its_checkpoint(stack, api, toy_data):
    train = api.upload(toy_data["big"])
    job = api.create_job(model="posttrain-tiny", training_file=train["id"], eval_samples=0,
                         seed=5, method={"type": "supervised", "supervised": {
                             "hyperparameters": {"n_epochs": 1, "batch_size": 16}}})
    deadline = time.monotonic() + 180
    while not api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]:
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.2)
    stack.kill("training-worker")  # SIGKILL the worker and its trainer child
    checkpoint = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"][0]
    stack.start_training_worker()

    done = api.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    messages = [event["message"] for event in api.events(job["id"])]
    assert any(m.startswith("Attempt 1 stopped heartbeating; retrying as attempt 2 from step")
               for m in messages), messages
    resumed = [m for m in messages if m.startswith("Attempt 2 started")]
    assert resumed and "resuming from checkpoint step-" in resumed[0]

    # Tokens: what the surviving lineage trained; usage: each attempt billed once, by segment.
    rows = UsageRecord.objects.filter(job_id=job["id"])
    assert sorted({(row.attempt, row.kind) for row in rows}) == [
        (1, "device_seconds"), (1, "trained_tokens"), (2, "device_seconds"),
        (2, "trained_tokens")]
    assert rows.count() == 4
    total_steps = 3000 // 16 + 1
    attempt2_tokens = int(rows.get(attempt=2, kind="trained_tokens").quantity)
    assert attempt2_tokens > 0
    retry = next(m for m in messages if m.startswith("Attempt 1 stopped heartbeating"))
    resumed_step = int(retry.rsplit("from step ", 1)[1])
    assert resumed_step >= checkpoint["step_number"]
    checkpoints = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints",
                               params={"limit": 100}).json()["data"]
    resumed_from = next(c for c in checkpoints if c["step_number"] == resumed_step)
    assert done["trained_tokens"] == resumed_from["trained_tokens"] + attempt2_tokens
    device_seconds = sum(row.quantity for row in rows if row.kind == "device_seconds")
    assert Decimal(done["usage"]["device_seconds"]) == device_seconds
    final = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"][0]
    assert final["step_number"] == total_steps


def test_sigterm_drains_the_worker_and_another_one_resumes_the_job(stack, api, toy_data):
    from posttrain_server.jobs.models import Attempt

    train = api.upload(toy_data["big"])
    job = api.create_job(model="posttrain-tiny", training_file=train["id"], eval_samples=0,
                         seed=6, method={"type": "supervised", "supervised": {
                             "hyperparameters": {"n_epochs": 1, "batch_size": 16}}})
    deadline = time.monotonic() + 180
    while not any(e["type"] == "metrics" for e in api.events(job["id"])):
        assert time.monotonic() < deadline, "the job never started training"
        time.sleep(0.2)

    assert stack.terminate("training-worker") == 0  # a node drain: SIGTERM, then it exits
    handed_back = api.wait_job(job["id"], {"queued", "succeeded", "failed"}, timeout=60)
    assert handed_back["status"] == "queued"
    first = Attempt.objects.get(job_id=job["id"], number=1)
    assert first.status == "preempted"

    stack.start_training_worker()
    done = api.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    messages = [event["message"] for event in api.events(job["id"])]
    assert any("this worker is draining" in m for m in messages)
    retry = next(m for m in messages if m.startswith("Attempt 1 was handed back"))
    assert "retrying as attempt 2 from step " in retry
    resumed_step = int(retry.rsplit("from step ", 1)[1])
    second = Attempt.objects.get(job_id=job["id"], number=2)
    assert second.resume_from_key.endswith(f"/step-{resumed_step}.tar")
    rows = UsageRecord.objects.filter(job_id=job["id"])
    assert sorted((row.attempt, row.kind) for row in rows) == [
        (1, "device_seconds"), (1, "trained_tokens"), (2, "device_seconds"),
        (2, "trained_tokens")]
    assert done["trained_tokens"] == second.resume_trained_tokens + int(
        rows.get(attempt=2, kind="trained_tokens").quantity)
