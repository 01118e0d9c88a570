"""A job on two devices: the trainer runs under torchrun (2 CPU processes, gloo), reports once,
and every allocated device is billed."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from posttrain_server.billing.models import UsageRecord
from posttrain_server.jobs.models import Attempt
from tests.e2e.test_sft_end_to_end import _expected_tokens
from workers.toytask import read_jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _metric(stack, line_start: str) -> float:
    text = httpx.get(f"{stack.url}/metrics", timeout=10).text
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(line_start)]
    return sum(values)


def test_a_two_device_job_trains_under_torchrun_and_bills_both_devices(stack, api, toy_data):
    succeeded_before = _metric(stack, 'posttrain_jobs{pool="cpu",status="succeeded"}')
    assert httpx.get(f"{stack.url}/readyz", timeout=10).json()["status"] == "ready"
    train = api.upload(toy_data["train"])
    job = api.create_job(model="posttrain-tiny", training_file=train["id"], devices=2,
                         eval_samples=0, seed=11, method={"type": "supervised", "supervised": {
                             "hyperparameters": {"n_epochs": 1, "batch_size": 16}}})
    done = api.wait_job(job["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["usage"]["devices"] == 2

    # 240 rows, batch 16 per device, 2 devices: 8 optimizer steps, reported once each.
    metrics = [e for e in api.events(job["id"]) if e["type"] == "metrics"]
    steps = [event["data"]["step"] for event in metrics]
    assert steps == sorted(set(steps)) and metrics[-1]["data"]["total_steps"] == 8

    # Tokens are counted over both ranks, once: the whole dataset, one epoch, plus the 16 rows
    # the distributed sampler repeats to split 240 rows evenly into 8 steps of 2 x 16 (they are
    # really trained on, so they are billed).
    rows = read_jsonl(toy_data["train"])
    expected = _expected_tokens(rows)
    longest = max(_expected_tokens([row]) for row in rows)
    assert expected < done["trained_tokens"] <= expected + 16 * longest

    # Device-seconds: both devices for the attempt's whole wall-clock, one usage row.
    attempt = Attempt.objects.get(job_id=job["id"], number=1)
    wall = Decimal(str((attempt.finished_at - attempt.claimed_at).total_seconds()))
    billed = UsageRecord.objects.get(job_id=job["id"], kind="device_seconds").quantity
    assert Decimal(done["usage"]["device_seconds"]) == billed
    assert 2 * wall - 3 <= billed <= 2 * wall + 1

    # The operator's view changed with it (gunicorn's workers add up their histograms).
    assert _metric(stack, 'posttrain_jobs{pool="cpu",status="succeeded"}') == (
        succeeded_before + 1)
    assert _metric(stack, 'posttrain_http_request_duration_seconds_count{method="GET",'
                          'route="/v1/fine_tuning/jobs/<str:job_id>",status="200"}') >= 2
