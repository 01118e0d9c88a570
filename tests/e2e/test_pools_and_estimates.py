"""Pools and estimates over HTTP with a real worker: the estimate's tokens are the bill's, and
the bill's eval tokens lie between what the estimate said the evals read and its bound."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _wait_worker_online(api, pool: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pools = {p["id"]: p for p in api.http.get("/pools").json()["data"]}
        if pools[pool]["workers_online"] >= 1:
            return pools
        time.sleep(0.5)
    raise TimeoutError(f"no worker of pool {pool} announced itself in {timeout}s")


def _price_eval_tokens() -> str:
    """A price book version that charges eval tokens (the seeded one makes them free)."""
    from django.utils import timezone

    from posttrain_server.billing.models import PriceBook
    from posttrain_server.billing.prices import DEFAULT_RATES

    rates = DEFAULT_RATES.as_json()
    rates["token_rates"]["eval_tokens"] = {"*": {"tiny": "10.00"}}
    PriceBook.objects.create(version="e2e-eval-priced", effective_at=timezone.now(), **rates)
    return "e2e-eval-priced"


def test_the_estimated_tokens_are_exactly_the_tokens_the_job_bills(api, toy_data):
    from posttrain_server.billing.models import UsageRecord

    version = _price_eval_tokens()
    pools = _wait_worker_online(api, "cpu")
    assert set(pools) >= {"cpu", "blackwell", "rubin"}
    worker = pools["cpu"]["workers"][0]
    assert worker["devices"] >= 1 and worker["host"]
    assert pools["rubin"]["workers_online"] == 0

    train = api.upload(toy_data["train"])
    # No validation file: the trainer holds out a seeded slice, which the estimate must mirror.
    body = {"model": "posttrain-tiny", "training_file": train["id"], "seed": 11,
            "eval_samples": 20, "pool": "auto", "method": {"type": "supervised", "supervised": {
                "hyperparameters": {"n_epochs": 2, "batch_size": 16}}}}
    response = api.http.post("/fine_tuning/jobs/estimate", json=body)
    assert response.status_code == 200, response.text
    estimate = response.json()
    assert estimate["pool"] == "cpu"  # the only pool with a worker online
    by_pool = {entry["pool"]: entry for entry in estimate["pools"]}
    assert set(by_pool) == {"cpu", "blackwell", "rubin"}
    assert all(entry["trained_tokens"] == estimate["trained_tokens"] > 0
               for entry in by_pool.values())

    job = api.create_job(**body)
    assert job["pool"] == "cpu"
    assert job["quoted_cost"] == by_pool["cpu"]["cost"]["total"]
    done = api.wait_job(job["id"])
    assert done["status"] == "succeeded", done["error"]

    assert done["trained_tokens"] == estimate["trained_tokens"]
    assert done["cost"]["price_version"] == estimate["price_version"] == version
    quoted, billed = by_pool["cpu"]["cost"]["tokens_by_kind"], done["cost"]["tokens_by_kind"]
    assert billed["trained_tokens"] == quoted["trained_tokens"]

    # Eval tokens: metered (before, every checkpoint, after), billed at the job's price book,
    # between what the estimate said the evals read (exact) and its bound (every answer at
    # its full budget).
    eval_tokens = done["usage"]["eval_tokens"]
    assert estimate["eval_tokens_read"] < eval_tokens <= estimate["eval_tokens"]
    assert Decimal(billed["eval_tokens"]) == (Decimal(eval_tokens) * 10 / 1_000_000).quantize(
        Decimal("0.000001")) > 0
    assert Decimal(done["cost"]["tokens"]) <= Decimal(by_pool["cpu"]["cost"]["tokens"])
    rows = UsageRecord.objects.filter(job_id=job["id"], kind="eval_tokens")
    assert sorted(key.rsplit(":", 1)[1] for key in rows.values_list("idempotency_key",
                                                                      flat=True)) == sorted(
        estimate["eval_segments"])
    assert sum(int(row.quantity) for row in rows) == eval_tokens
    checkpoints = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert {f"step-{c['step_number']}" for c in checkpoints} == set(
        estimate["eval_segments"][1:-1])
    assert all(0 <= c["metrics"]["eval_exact_match"] <= 1 and c["metrics"]["eval_samples"] == 20
               for c in checkpoints)
    usage = api.http.get("/organization/usage", params={"group_by": ["job", "kind"]}).json()
    reported = sum(int(Decimal(result["quantity"])) for bucket in usage["data"]
                   for result in bucket["results"]
                   if result["job_id"] == job["id"] and result["kind"] == "eval_tokens")
    assert reported == eval_tokens
    alternatives = {entry["pool"]: entry for entry in done["alternatives"]}
    assert set(alternatives) == {"blackwell", "rubin"}
    assert all(entry["trained_tokens"] == done["trained_tokens"]
               for entry in alternatives.values())
    assert Decimal(done["usage"]["device_seconds"]) > 0


def test_an_unknown_or_disabled_pool_is_refused_and_an_idle_pool_waits_and_says_so(
        api, toy_data):
    from posttrain_server.pools.models import Pool

    train = api.upload(toy_data["train"])
    body = {"model": "posttrain-tiny", "training_file": train["id"], "eval_samples": 0}

    unknown = api.http.post("/fine_tuning/jobs", json={**body, "pool": "tpu"})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["code"] == "unknown_pool"

    Pool.objects.filter(name="blackwell").update(enabled=False)
    try:
        disabled = api.http.post("/fine_tuning/jobs", json={**body, "pool": "blackwell"})
        assert disabled.status_code == 400
        assert disabled.json()["error"]["code"] == "pool_disabled"
    finally:
        Pool.objects.filter(name="blackwell").update(enabled=True)

    waiting = api.create_job(**body, pool="rubin")
    assert waiting["pool"] == "rubin"
    messages = [event["message"] for event in api.events(waiting["id"])]
    assert any(m.startswith("No worker is online for pool 'rubin' yet") for m in messages)
    assert api.http.post(f"/fine_tuning/jobs/{waiting['id']}/cancel").status_code == 200
