"""Budgets, pause and resume with a real worker: stop at the cap, keep the checkpoint, resume."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


WAIT_S = 900  # generous: the machine may be shared; never a timing assertion


def _request(train_id: str, *, epochs: int, batch: int) -> dict:
    return {"model": "posttrain-tiny", "training_file": train_id, "seed": 3, "eval_samples": 0,
            "pool": "cpu", "method": {"type": "supervised", "supervised": {
                "hyperparameters": {"n_epochs": epochs, "batch_size": batch}}}}


@pytest.mark.timeout(2 * WAIT_S)
def test_a_job_pauses_at_its_max_cost_and_resumes_from_its_checkpoint_once_raised(
        api, toy_data):
    from django.utils import timezone

    from posttrain_server.billing.models import PriceBook

    # Token-only pricing (a zero GPU-hour rate), so the cap falls at a known token count
    # whatever the machine's load.
    PriceBook.objects.create(
        version="e2e-tokens-only", effective_at=timezone.now(),
        token_rates={"trained_tokens": {"supervised": {"tiny": "0.10"}}},
        gpu_hour_rates={"cpu": "0", "blackwell": "6", "rubin": "12"})
    train = api.upload(toy_data["train"])
    body = _request(train["id"], epochs=3, batch=8)
    estimate = api.http.post("/fine_tuning/jobs/estimate", json=body).json()
    assert estimate["price_version"] == "e2e-tokens-only"
    cpu = next(entry for entry in estimate["pools"] if entry["pool"] == "cpu")
    cap = (Decimal(cpu["cost"]["tokens"]) * Decimal("0.4")).quantize(Decimal("0.000001"))

    job = api.create_job(**body, max_cost=str(cap))
    assert job["max_cost"] == str(cap)
    paused = api.wait_job(job["id"], {"paused", "succeeded", "failed", "cancelled"},
                          timeout=WAIT_S)

    assert paused["status"] == "paused", paused
    assert paused["error"]["code"] == "max_cost_reached"
    total_steps = 3 * (240 // 8)
    checkpoints = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert checkpoints and checkpoints[0]["step_number"] < total_steps
    spent = Decimal(paused["cost"]["total"])
    # Reached the cap, overshooting by at most one step: 8 rows of < 40 tokens at $0.10/M.
    assert cap <= spent <= cap + Decimal("0.000032"), (spent, cap)
    assert 0 < paused["trained_tokens"] < estimate["trained_tokens"]
    messages = [event["message"] for event in api.events(job["id"])]
    assert any(m.startswith("The job is paused after") and "max_cost" in m for m in messages)

    refused = api.http.post(f"/fine_tuning/jobs/{job['id']}/resume", json={})
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "max_cost_reached"

    resumed = api.http.post(f"/fine_tuning/jobs/{job['id']}/resume", json={"max_cost": "1.00"})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "queued"
    done = api.wait_job(job["id"], timeout=WAIT_S)

    assert done["status"] == "succeeded", done["error"]
    assert done["error"] is None
    assert done["trained_tokens"] == estimate["trained_tokens"]  # nothing trained twice
    messages = [event["message"] for event in api.events(job["id"])]
    step = checkpoints[0]["step_number"]
    assert any(m.startswith(f"Resumed as attempt 2 from step {step}") for m in messages)
    assert any(m.startswith("Attempt 2 started on worker") and f"step-{step}" in m
               for m in messages)


@pytest.mark.timeout(2 * WAIT_S)
def test_a_running_job_pauses_on_request_and_resumes_to_the_end(api, toy_data):
    train = api.upload(toy_data["big"])
    job = api.create_job(**_request(train["id"], epochs=1, batch=16))
    api.wait_job(job["id"], {"running", "succeeded", "failed"})
    for _ in range(300):  # wait until the trainer has logged a step
        if any(event["type"] == "metrics" for event in api.events(job["id"])):
            break
        time.sleep(0.2)

    response = api.http.post(f"/fine_tuning/jobs/{job['id']}/pause")
    assert response.status_code == 200
    assert response.json()["status"] in {"pausing", "paused"}
    paused = api.wait_job(job["id"], {"paused", "succeeded", "failed", "cancelled"},
                          timeout=WAIT_S)
    assert paused["status"] == "paused" and paused["error"] is None
    assert Decimal(paused["cost"]["total"]) > 0

    assert api.http.post(f"/fine_tuning/jobs/{job['id']}/resume").status_code == 200
    done = api.wait_job(job["id"], timeout=WAIT_S)

    assert done["status"] == "succeeded", done["error"]
    assert done["fine_tuned_model"]
