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


def _in_estimate_bounds(api, body: dict, done: dict) -> None:
    estimate = api.http.post("/fine_tuning/jobs/estimate", json=body).json()
    assert estimate["eval_tokens_read"] < done["usage"]["eval_tokens"] <= estimate["eval_tokens"]


def test_dpo_and_grpo_jobs_train_on_two_devices_and_count_every_rank_once(api, tmp_path):
    from tests.e2e.test_dpo_end_to_end import _pair_tokens
    from tests.e2e.test_reinforcement_end_to_end import EXACT, HYPER
    from workers.toychain import preference_rows, reinforcement_rows
    from workers.toytask import write_jsonl

    pairs = preference_rows(96, seed=0, split="train")
    dpo_train = api.upload(write_jsonl(tmp_path / "prefs.jsonl", pairs))
    dpo_valid = api.upload(write_jsonl(tmp_path / "prefs-valid.jsonl",
                                       preference_rows(24, seed=0, split="validation")))
    dpo_body = {"model": "posttrain-tiny", "training_file": dpo_train["id"],
                "validation_file": dpo_valid["id"], "seed": 3, "eval_samples": 24,
                "devices": 2, "method": {"type": "dpo", "dpo": {"hyperparameters": {
                    "n_epochs": 1, "batch_size": 16, "beta": 0.1}}}}
    rl_train = api.upload(write_jsonl(tmp_path / "rft.jsonl",
                                      reinforcement_rows(32, seed=0, split="train")))
    rl_valid = api.upload(write_jsonl(tmp_path / "rft-valid.jsonl",
                                      reinforcement_rows(16, seed=0, split="validation")))
    rl_body = {"model": "posttrain-tiny", "training_file": rl_train["id"],
               "validation_file": rl_valid["id"], "seed": 5, "devices": 2,
               "method": {"type": "reinforcement", "reinforcement": {
                   "grader": EXACT, "hyperparameters": HYPER}}}

    for body in (dpo_body, rl_body):
        done = api.wait_job(api.create_job(**body)["id"])
        assert done["status"] == "succeeded", done["error"]
        assert done["usage"]["devices"] == 2
        messages = [e["message"] for e in api.events(done["id"])]
        assert sum(m.startswith("Eval before:") for m in messages) == (
            2 if body is dpo_body else 1)  # DPO: preference accuracy and exact match, once
        _in_estimate_bounds(api, body, done)
        if body is dpo_body:
            # 96 pairs split evenly over 2 x 16: every pair once, counted over both ranks.
            assert done["trained_tokens"] == _pair_tokens(pairs)
        else:
            # 32 prompts x 4 samples over both ranks, each sample at least its end token.
            assert 32 * 4 <= done["trained_tokens"] <= 32 * 4 * 6
            assert done["usage"]["rollout_tokens"] > done["trained_tokens"]
