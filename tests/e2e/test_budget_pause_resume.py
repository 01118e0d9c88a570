"""Budgets, pause and resume with a real worker: stop at the cap, keep the checkpoint, resume."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _request(train_id: str) -> dict:
    return {"model": "posttrain-tiny", "training_file": train_id, "seed": 3, "eval_samples": 0,
            "pool": "cpu", "method": {"type": "supervised", "supervised": {
                "hyperparameters": {"n_epochs": 2, "batch_size": 16}}}}


def test_a_job_pauses_at_its_max_cost_and_resumes_from_its_checkpoint_once_raised(
        api, toy_data):
    train = api.upload(toy_data["big"])
    body = _request(train["id"])
    estimate = api.http.post("/fine_tuning/jobs/estimate", json=body).json()
    cpu = next(entry for entry in estimate["pools"] if entry["pool"] == "cpu")
    cap = (Decimal(cpu["cost"]["tokens"]) * Decimal("0.4")).quantize(Decimal("0.000001"))

    job = api.create_job(**body, max_cost=str(cap))
    assert job["max_cost"] == str(cap)
    paused = api.wait_job(job["id"], {"paused", "succeeded", "failed", "cancelled"})

    assert paused["status"] == "paused", paused
    assert paused["error"]["code"] == "max_cost_reached"
    total_steps = 2 * (3000 // 16 + 1)
    checkpoints = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert checkpoints and checkpoints[0]["step_number"] < total_steps
    spent = Decimal(paused["cost"]["total"])
    # Reached the cap, overshooting by at most one step plus the stop's few seconds of CPU.
    assert cap <= spent < cap * Decimal("1.2"), (spent, cap)
    assert 0 < paused["trained_tokens"] < estimate["trained_tokens"]
    messages = [event["message"] for event in api.events(job["id"])]
    assert any(m.startswith("The job is paused after") and "max_cost" in m for m in messages)

    refused = api.http.post(f"/fine_tuning/jobs/{job['id']}/resume", json={})
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "max_cost_reached"

    resumed = api.http.post(f"/fine_tuning/jobs/{job['id']}/resume", json={"max_cost": "1.00"})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "queued"
    done = api.wait_job(job["id"])

    assert done["status"] == "succeeded", done["error"]
    assert done["error"] is None
    assert done["trained_tokens"] == estimate["trained_tokens"]  # nothing trained twice
    messages = [event["message"] for event in api.events(job["id"])]
    step = checkpoints[0]["step_number"]
    assert any(m.startswith(f"Resumed as attempt 2 from step {step}") for m in messages)
    assert any(m.startswith("Attempt 2 started on worker") and f"step-{step}" in m
               for m in messages)


def test_a_running_job_pauses_on_request_and_resumes_to_the_end(api, toy_data):
    train = api.upload(toy_data["big"])
    job = api.create_job(**_request(train["id"]))
    api.wait_job(job["id"], {"running", "succeeded", "failed"})
    for _ in range(300):  # wait until the trainer has logged a step
        if any(event["type"] == "metrics" for event in api.events(job["id"])):
            break
        time.sleep(0.2)

    response = api.http.post(f"/fine_tuning/jobs/{job['id']}/pause")
    assert response.status_code == 200
    assert response.json()["status"] in {"pausing", "paused"}
    paused = api.wait_job(job["id"], {"paused", "succeeded", "failed", "cancelled"})
    assert paused["status"] == "paused" and paused["error"] is None
    assert Decimal(paused["cost"]["total"]) > 0

    assert api.http.post(f"/fine_tuning/jobs/{job['id']}/resume").status_code == 200
    done = api.wait_job(job["id"])

    assert done["status"] == "succeeded", done["error"]
    assert done["fine_tuned_model"]
