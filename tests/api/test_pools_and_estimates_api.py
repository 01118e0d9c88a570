"""Pools, estimates, pool choice and organization quotas over the API (real database)."""

from __future__ import annotations

import json
import time
from decimal import Decimal

import pytest
from django.utils import timezone

from posttrain_server.billing.models import OrganizationQuota, PriceBook, TokenCount
from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.pools.models import Pool, TrainingWorker
from posttrain_server.pools.services import worker_heartbeat_record
from workers import contract, env


def body(file_id: str, **overrides) -> dict:
    return {"model": "posttrain-tiny", "training_file": file_id, "seed": 5,
            "method": {"type": "supervised", "supervised": {"hyperparameters": {
                "n_epochs": 3, "batch_size": 4}}}, **overrides}


def estimate(tenant, file_id: str, **overrides):
    return tenant.client.post("/v1/fine_tuning/jobs/estimate", body(file_id, **overrides),
                              format="json")


def worker_online(pool: str, name: str = "w1", job: str | None = None) -> None:
    now = time.time()
    worker_heartbeat_record(beat=contract.WorkerHeartbeat(
        worker=f"train.{pool}@host:{name}", pool=pool, host="host", devices=8,
        device_kind="B200", current_job=job, started_at=now, sent_at=now))


@pytest.fixture
def training_file(alice, processed_file) -> str:
    return processed_file(alice, 30)


def chat_tokens(rows: list[dict]) -> list[int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(env.models_root() / "posttrain-tiny")
    return [len(tokenizer.apply_chat_template(row["messages"], tokenize=True,
                                              return_dict=True)["input_ids"]) for row in rows]


def test_pools_list_the_seeded_pools_with_prices_workers_and_load(alice, training_file):
    worker_online("blackwell", job="ftjob-x")  # another organization's job
    own = alice.client.post("/v1/fine_tuning/jobs", body(training_file, pool="cpu"),
                            format="json").json()["id"]
    worker_online("rubin", job=own)

    pools = {p["id"]: p for p in alice.client.get("/v1/pools").json()["data"]}

    assert set(pools) == {"cpu", "blackwell", "rubin"}
    assert pools["blackwell"]["gpu_hour_rate"] == "6.00"
    assert pools["rubin"]["queue"] == "train.rubin"
    assert pools["blackwell"]["gpus_per_job"]["large"] == 4 * pools["rubin"]["gpus_per_job"][
        "large"]
    assert pools["blackwell"]["workers_online"] == 1
    # Busy, but whose job it runs is not another organization's business.
    assert pools["blackwell"]["workers"][0]["current_job"] is None
    assert pools["blackwell"]["workers"][0]["busy"] is True
    assert pools["rubin"]["workers"][0]["current_job"] == own
    assert pools["blackwell"]["workers"][0]["devices"] == 8
    assert pools["cpu"]["workers_online"] == 0
    assert pools["cpu"]["jobs"] == {"queued": 1, "running": 0}


def test_a_worker_silent_longer_than_the_online_window_is_offline(alice, settings):
    worker_online("rubin")
    TrainingWorker.objects.update(last_seen_at=timezone.now() - timezone.timedelta(
        seconds=settings.WORKER_ONLINE_S + 1))

    pools = {p["id"]: p for p in alice.client.get("/v1/pools").json()["data"]}

    assert pools["rubin"]["workers_online"] == 0


def test_rubin_costs_about_a_tenth_per_token_of_blackwell_for_the_largest_models(db):
    from posttrain_server.billing.prices import DEFAULT_RATES

    blackwell, rubin = Pool.objects.get(name="blackwell"), Pool.objects.get(name="rubin")
    per_token = {pool.name: DEFAULT_RATES.gpu_hour_rate(pool.name)
                 / Decimal(pool.throughput_for("large")) for pool in (blackwell, rubin)}
    assert rubin.gpus_for("large") * 4 == blackwell.gpus_for("large")
    assert per_token["rubin"] / per_token["blackwell"] == Decimal("0.1")


def test_an_estimate_counts_tokens_exactly_and_prices_every_enabled_pool(alice, training_file):
    from posttrain_server.files.models import File
    from workers.storage import default_storage

    response = estimate(alice, training_file, eval_samples=0)

    assert response.status_code == 200, response.json()
    result = response.json()
    file = File.objects.get(id=training_file)
    with default_storage().open(file.storage_key) as stream:
        rows = [json.loads(line) for line in stream if line.strip()]
    assert result["trained_tokens"] == 3 * sum(chat_tokens(rows))
    pools = {entry["pool"]: entry for entry in result["pools"]}
    assert set(pools) == {"cpu", "blackwell", "rubin"}
    for entry in pools.values():
        assert entry["trained_tokens"] == result["trained_tokens"]
        cost = entry["cost"]
        assert Decimal(cost["total"]) == Decimal(cost["tokens"]) + Decimal(cost["compute"])
        assert Decimal(entry["gpu_hours"]) > 0 and entry["within_budget"] is True
    assert pools["cpu"]["cost"]["tokens"] == pools["rubin"]["cost"]["tokens"]
    assert result["pool"] == "cpu"  # no worker online anywhere: the cheapest enabled pool
    assert FineTuningJob.objects.count() == 0  # an estimate writes no job
    assert TokenCount.objects.filter(file_id=training_file).count() == 1  # cached


def test_the_estimate_leaves_out_the_rows_held_out_for_evaluation(alice, training_file):
    everything = estimate(alice, training_file, eval_samples=0).json()["trained_tokens"]
    held_out = estimate(alice, training_file, eval_samples=50).json()["trained_tokens"]
    truncated = estimate(alice, training_file, eval_samples=0,
                         max_seq_length=16).json()["trained_tokens"]

    assert 0 < held_out < everything  # 3 of the 30 rows are kept out of training
    assert truncated <= 3 * 30 * 16 < everything


def test_auto_picks_the_cheapest_pool_with_a_worker_online(alice, training_file):
    worker_online("rubin")

    result = estimate(alice, training_file, pool="auto").json()
    job = alice.client.post("/v1/fine_tuning/jobs", body(training_file, pool="auto"),
                            format="json").json()

    assert result["pool"] == "rubin"
    assert job["pool"] == "rubin"
    assert job["quoted_cost"] == next(p for p in result["pools"]
                                      if p["pool"] == "rubin")["cost"]["total"]


@pytest.mark.parametrize(("pool", "code"), [("tpu", "unknown_pool"),
                                            ("blackwell", "pool_disabled")])
def test_an_unknown_or_disabled_pool_is_refused_and_nothing_is_written(
        alice, training_file, pool, code):
    Pool.objects.filter(name="blackwell").update(enabled=False)

    for path in ("/v1/fine_tuning/jobs", "/v1/fine_tuning/jobs/estimate"):
        response = alice.client.post(path, body(training_file, pool=pool), format="json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == code
        assert response.json()["error"]["param"] == "pool"
    assert FineTuningJob.objects.count() == 0


def test_a_disabled_pool_is_left_out_of_estimates(alice, training_file):
    Pool.objects.filter(name="blackwell").update(enabled=False)

    pools = {entry["pool"] for entry in estimate(alice, training_file).json()["pools"]}

    assert pools == {"cpu", "rubin"}


def test_a_job_keeps_the_price_book_version_it_was_quoted_with(alice, training_file):
    first = alice.client.post("/v1/fine_tuning/jobs", body(training_file), format="json").json()
    PriceBook.objects.create(version="2026-12-01", effective_at=timezone.now(),
                             token_rates={"trained_tokens": {"supervised": {"tiny": "1.00"}}},
                             gpu_hour_rates={"cpu": "0", "blackwell": "6", "rubin": "12"})
    second = alice.client.post("/v1/fine_tuning/jobs", body(training_file), format="json").json()

    assert first["cost"]["price_version"] == "2026-11-01"
    assert second["cost"]["price_version"] == "2026-12-01"
    assert Decimal(second["quoted_cost"]) > Decimal(first["quoted_cost"])


def test_the_concurrent_job_limit_refuses_the_job_past_it(alice, training_file):
    OrganizationQuota.objects.create(organization=alice.organization, max_concurrent_jobs=2)
    for _ in range(2):
        assert alice.client.post("/v1/fine_tuning/jobs", body(training_file),
                                 format="json").status_code == 200

    refused = alice.client.post("/v1/fine_tuning/jobs", body(training_file), format="json")

    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "concurrent_job_limit"
    assert refused.headers["x-should-retry"] == "false"
    assert FineTuningJob.objects.filter(organization=alice.organization).count() == 2


def test_the_monthly_budget_refuses_a_job_whose_estimate_does_not_fit(alice, bob, training_file):
    quote = Decimal(estimate(alice, training_file).json()["pools"][0]["cost"]["total"])
    OrganizationQuota.objects.create(organization=alice.organization,
                                     monthly_budget=quote * 3 / 2)
    assert alice.client.post("/v1/fine_tuning/jobs", body(training_file),
                             format="json").status_code == 200

    after = estimate(alice, training_file).json()
    refused = alice.client.post("/v1/fine_tuning/jobs", body(training_file), format="json")

    assert Decimal(after["month_spend"]) == quote
    assert after["pools"][0]["within_budget"] is False
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "monthly_budget_exceeded"


def test_a_model_folder_without_a_usable_tokenizer_is_a_clear_error(alice, training_file,
                                                                    tmp_path):
    (tmp_path / "config.json").write_text("{}")

    response = estimate(alice, training_file, model=str(tmp_path))

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "tokenizer_unavailable"
    assert response.json()["error"]["param"] == "model"
