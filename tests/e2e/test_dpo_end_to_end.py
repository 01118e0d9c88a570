"""A DPO job over HTTP, trained for real by TRL's DPOTrainer in a real worker."""

from __future__ import annotations

from decimal import Decimal

import pytest

from posttrain_server.billing import prices
from workers import env
from workers.toychain import preference_rows
from workers.toytask import write_jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _pair_tokens(rows: list[dict]) -> int:
    """Real tokens of prompt + chosen and prompt + rejected under the chat template."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(env.models_root() / "posttrain-tiny")
    total = 0
    for row in rows:
        for answer in (row["preferred_output"], row["non_preferred_output"]):
            total += len(tokenizer.apply_chat_template(
                row["input"]["messages"] + answer, tokenize=True,
                return_dict=True)["input_ids"])
    return total


def test_a_dpo_job_trains_reports_preference_accuracy_and_bills(api, tmp_path):
    train_rows = preference_rows(96, seed=0, split="train")
    train = api.upload(write_jsonl(tmp_path / "prefs.jsonl", train_rows))
    validation = api.upload(write_jsonl(tmp_path / "prefs-valid.jsonl",
                                        preference_rows(24, seed=0, split="validation")))
    assert train["status"] == "processed", train
    assert train["validation"]["format"] == "preference"

    job = api.create_job(model="posttrain-tiny", training_file=train["id"],
                         validation_file=validation["id"], seed=3, eval_samples=24,
                         method={"type": "dpo", "dpo": {"hyperparameters": {
                             "n_epochs": 1, "batch_size": 16, "beta": 0.1}}})
    done = api.wait_job(job["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["method"]["dpo"]["hyperparameters"]["beta"] == 0.1

    messages = [event["message"] for event in api.events(job["id"])]
    assert any(m.startswith("Training started: dpo, LoRA") for m in messages), messages
    assert any(m.startswith("Eval before: preference_accuracy=") for m in messages)
    assert any(m.startswith("Eval after: preference_accuracy=") for m in messages)
    assert any(m.startswith("Eval after: exact_match=") for m in messages)
    metrics = [e for e in api.events(job["id"]) if e["type"] == "metrics"]
    assert metrics and "train_reward_accuracy" in metrics[-1]["data"]

    # Trained tokens: chosen + rejected sequences of every training pair, as TRL counted them.
    assert done["trained_tokens"] == _pair_tokens(train_rows)
    cost = prices.job_cost(method="dpo", size_class="tiny", pool="cpu",
                           trained_tokens=done["trained_tokens"],
                           device_seconds=Decimal(done["usage"]["device_seconds"]))
    assert Decimal(done["cost"]["total"]) == cost.total > 0

    evaluation = done["eval"]
    assert evaluation["metric"] == "preference_accuracy"
    assert 0 <= evaluation["before"] <= 1 and 0 <= evaluation["after"] <= 1
    assert evaluation["gain"] == pytest.approx(evaluation["after"] - evaluation["before"])
    assert evaluation["gain_per_dollar"] == pytest.approx(
        evaluation["gain"] / float(cost.total))
    assert set(evaluation["more"]["exact_match"]) == {"before", "after"}
    assert "after" in evaluation["more"]["implicit_reward_accuracy"]
    assert done["fine_tuned_model"].startswith("ft:posttrain-tiny:")


def test_bad_preference_rows_are_reported_with_their_line_numbers(api, tmp_path):
    rows = preference_rows(12, seed=1, split="train")
    rows[3] = {**rows[3], "non_preferred_output": rows[3]["preferred_output"]}
    rows[7] = {**rows[7], "preferred_output": [{"role": "user", "content": "x"}]}

    file = api.upload(write_jsonl(tmp_path / "bad-prefs.jsonl", rows))

    assert file["status"] == "error"
    lines = [(error["line"], error["message"]) for error in file["validation"]["errors"]]
    assert lines == [(4, "preferred_output and non_preferred_output are the same answer"),
                     (8, "preferred_output[0].role must be 'assistant'")]
