"""A user's whole SFT journey over HTTP, trained for real by a real worker on the real broker."""

from __future__ import annotations

import csv
import io
import tarfile
from decimal import Decimal

import pytest

from posttrain_server.billing import prices
from workers import env
from workers.toytask import read_jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _tar_names(content: bytes) -> set[str]:
    with tarfile.open(fileobj=io.BytesIO(content)) as tar:
        return set(tar.getnames())


def _expected_tokens(rows: list[dict]) -> int:
    """Real tokens of the training set under the model's chat template (what TRL counts)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(env.models_root() / "posttrain-tiny")
    return sum(len(tokenizer.apply_chat_template(row["messages"], tokenize=True,
                                                 return_dict=True)["input_ids"])
               for row in rows)


def test_a_supervised_job_trains_reports_and_bills(api, toy_data):
    train = api.upload(toy_data["train"])
    validation = api.upload(toy_data["validation"])
    assert train["status"] == "processed", train
    assert train["validation"]["example_count"] == 240

    job = api.create_job(
        model="posttrain-tiny", training_file=train["id"], validation_file=validation["id"],
        seed=7, suffix="e2e", metadata={"team": "e2e"}, eval_samples=40,
        method={"type": "supervised", "supervised": {"hyperparameters": {
            "n_epochs": 1, "batch_size": 16}}},
    )
    assert job["status"] == "queued"
    done = api.wait_job(job["id"])
    assert done["status"] == "succeeded", done["error"]

    # Events: the lifecycle in order, metrics from the trainer, both evals.
    events = api.events(job["id"])
    messages = [event["message"] for event in events]
    assert messages[0].startswith("Created fine-tuning job")
    assert any(m.startswith("Attempt 1 started on worker") for m in messages)
    metrics = [event for event in events if event["type"] == "metrics"]
    assert metrics, messages
    assert all(event["data"]["train_loss"] > 0 for event in metrics)
    assert metrics[-1]["data"]["step"] <= metrics[-1]["data"]["total_steps"] == 15
    assert any(m.startswith("Eval before: exact_match=") for m in messages)
    assert any(m.startswith("Eval after: exact_match=") for m in messages)
    assert messages[-1] == f"New fine-tuned model created: {done['fine_tuned_model']}"

    # Usage: real non-padding tokens of one epoch over the training file, as TRL counted them.
    rows = read_jsonl(toy_data["train"])
    assert done["trained_tokens"] == _expected_tokens(rows)
    assert done["usage"]["trained_tokens"] == done["trained_tokens"]
    device_seconds = Decimal(done["usage"]["device_seconds"])
    assert device_seconds > 0

    # Cost: the price table applied to the usage, to the millionth of a dollar.
    cost = prices.job_cost(method="supervised", size_class="tiny", pool="cpu",
                           trained_tokens=done["trained_tokens"], device_seconds=device_seconds)
    assert done["cost"]["tokens"] == str(cost.tokens)
    assert done["cost"]["compute"] == str(cost.compute)
    assert Decimal(done["cost"]["total"]) == cost.total > 0

    # Eval: before/after on the validation file, gain and gain per dollar derived from them.
    evaluation = done["eval"]
    assert evaluation["metric"] == "exact_match"
    assert 0.0 <= evaluation["before"] <= 1.0 and 0.0 <= evaluation["after"] <= 1.0
    assert evaluation["gain"] == pytest.approx(evaluation["after"] - evaluation["before"])
    assert evaluation["gain_per_dollar"] == pytest.approx(evaluation["gain"] / float(cost.total))

    # The model is listed and its LoRA adapter downloads.
    assert done["fine_tuned_model"].startswith("ft:posttrain-tiny:e2e-org:e2e:")
    models = api.http.get("/models").json()["data"]
    assert done["fine_tuned_model"] in {model["id"] for model in models}
    adapter = api.http.get(f"/models/{done['fine_tuned_model']}/content")
    assert adapter.status_code == 200
    assert {"adapter_config.json", "adapter_model.safetensors"} <= _tar_names(adapter.content)

    # Checkpoints: listed with a usable name, downloadable with trainer state to resume from.
    checkpoints = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert checkpoints and checkpoints[0]["step_number"] == 15
    assert checkpoints[0]["fine_tuned_model_checkpoint"] == (
        f"{done['fine_tuned_model']}:ckpt-step-15")
    archive = api.http.get(
        f"/fine_tuning/jobs/{job['id']}/checkpoints/{checkpoints[0]['id']}/content")
    assert {"adapter_model.safetensors", "trainer_state.json", "optimizer.pt"} <= _tar_names(
        archive.content)

    # The result file: OpenAI's metrics CSV.
    result = api.http.get(f"/files/{done['result_files'][0]}/content").text
    table = list(csv.DictReader(io.StringIO(result)))
    assert len(table) == len(metrics)
    assert float(table[0]["train_loss"]) == pytest.approx(metrics[0]["data"]["train_loss"])

    # A second job continues from the first one's result (adapter merged, new LoRA on top).
    follow_up = api.create_job(model=done["fine_tuned_model"], training_file=train["id"],
                               eval_samples=10, method={"type": "supervised", "supervised": {
                                   "hyperparameters": {"n_epochs": 1, "batch_size": 32}}})
    follow_done = api.wait_job(follow_up["id"])
    assert follow_done["status"] == "succeeded", follow_done["error"]
    assert follow_done["fine_tuned_model"].startswith("ft:posttrain-tiny:")


def test_cancelling_a_running_job_stops_it_keeps_a_checkpoint_and_bills_what_ran(api, toy_data):
    train = api.upload(toy_data["big"])
    job = api.create_job(model="posttrain-tiny", training_file=train["id"], eval_samples=0,
                         method={"type": "supervised", "supervised": {"hyperparameters": {
                             "n_epochs": 5, "batch_size": 8}}})
    api.wait_job(job["id"], {"running", "succeeded", "failed"})
    for _ in range(300):  # wait until the trainer has logged a step
        if any(event["type"] == "metrics" for event in api.events(job["id"])):
            break
        import time

        time.sleep(0.2)
    response = api.http.post(f"/fine_tuning/jobs/{job['id']}/cancel")
    assert response.status_code == 200
    assert response.json()["cancel_requested"] is True

    done = api.wait_job(job["id"], timeout=120)
    assert done["status"] == "cancelled"
    assert done["fine_tuned_model"] is None
    total_steps = 5 * (3000 // 8 + (1 if 3000 % 8 else 0))
    checkpoints = api.http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints").json()["data"]
    assert checkpoints, "a cancelled job keeps the checkpoint written when it stopped"
    assert checkpoints[0]["step_number"] < total_steps
    assert 0 < done["trained_tokens"] and Decimal(done["usage"]["device_seconds"]) > 0
    assert Decimal(done["cost"]["total"]) > 0
    messages = [event["message"] for event in api.events(job["id"])]
    assert any("Stopping at the next step: cancellation requested" in m for m in messages)

    again = api.http.post(f"/fine_tuning/jobs/{job['id']}/cancel")
    assert again.status_code == 409
    assert again.headers["x-should-retry"] == "false"


def test_a_file_with_errors_reports_line_numbers_and_cannot_start_a_job(api, tmp_path):
    bad = tmp_path / "bad.jsonl"
    # (A row ending with a user turn is now a valid reinforcement prompt, so line 1 is a chat
    # row without a user turn.)
    bad.write_bytes(b'{"messages": [{"role": "assistant", "content": "hi"}]}\nnot json\n')
    file = api.upload(bad)
    assert file["status"] == "error"
    lines = [error["line"] for error in file["validation"]["errors"]]
    assert lines == [1, 2]
    response = api.http.post("/fine_tuning/jobs", json={"model": "posttrain-tiny",
                                                        "training_file": file["id"]})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "training_file"
    assert response.json()["error"]["code"] == "invalid_file"
