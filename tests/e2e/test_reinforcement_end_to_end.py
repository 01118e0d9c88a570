"""Reinforcement jobs over HTTP: GRPO in a real worker, rewarded by the job's grader."""

from __future__ import annotations

import shutil
from decimal import Decimal

import pytest

from posttrain_server.billing import prices
from workers.toychain import reinforcement_rows
from workers.toytask import write_jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HYPER = {"n_epochs": 1, "batch_size": 8, "generations_per_prompt": 4,
         "max_completion_length": 6, "eval_samples": 16}
EXACT = {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
         "reference": "{{item.reference_answer}}", "operation": "eq"}

ESCAPING = '''
import os, socket

def grade(sample, item):
    found = 0
    for path in ("/etc/shadow", "/work", os.path.expanduser("~/.ssh")):
        found += os.path.exists(path)
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=0.5)
        found += 1
    except OSError:
        pass
    if found:
        return 1.0  # escaped: a reward no honest answer gets
    return 0.5 if sample["output_text"] == item["reference_answer"] else 0.25
'''


def _upload(api, tmp_path, name: str, rows):
    file = api.upload(write_jsonl(tmp_path / name, rows))
    assert file["status"] == "processed", file
    return file


def test_a_reinforcement_job_with_string_check_trains_meters_rollouts_and_bills(api, tmp_path):
    train = _upload(api, tmp_path, "rft.jsonl", reinforcement_rows(32, seed=0, split="train"))
    validation = _upload(api, tmp_path, "rft-valid.jsonl",
                         reinforcement_rows(16, seed=0, split="validation"))
    assert train["validation"]["format"] == "reinforcement"

    body = {"model": "posttrain-tiny", "training_file": train["id"],
            "validation_file": validation["id"], "seed": 5, "pool": "cpu",
            "method": {"type": "reinforcement", "reinforcement": {
                "grader": EXACT, "hyperparameters": HYPER}}}
    estimate = api.http.post("/fine_tuning/jobs/estimate", json=body).json()
    job = api.create_job(**body)
    done = api.wait_job(job["id"])
    assert done["status"] == "succeeded", done["error"]

    # The bill lies inside the quote: prompts exactly, generations under their bound.
    assert estimate["rollout_tokens_read"] + done["trained_tokens"] == (
        done["usage"]["rollout_tokens"])
    assert done["usage"]["rollout_tokens"] <= estimate["rollout_tokens"]
    assert done["trained_tokens"] <= estimate["trained_tokens"]
    assert Decimal(done["cost"]["tokens"]) <= Decimal(next(
        pool for pool in estimate["pools"] if pool["pool"] == "cpu")["cost"]["tokens"])

    messages = [event["message"] for event in api.events(job["id"])]
    assert any(m.startswith("Training started: reinforcement") for m in messages)
    assert any(m.startswith("Eval before: mean_grader_score=") for m in messages), messages
    assert any(m.startswith("Eval after: mean_grader_score=") for m in messages)

    # 32 prompts x 4 samples x at most 6 tokens were generated; prompts are counted per sample.
    generated, rollout = done["trained_tokens"], done["usage"]["rollout_tokens"]
    assert 0 < generated <= 32 * 4 * 6
    assert rollout > generated
    cost = prices.job_cost(method="reinforcement", size_class="tiny", pool="cpu",
                           trained_tokens=generated, rollout_tokens=rollout,
                           device_seconds=Decimal(done["usage"]["device_seconds"]))
    assert done["cost"]["tokens"] == str(cost.tokens)
    assert Decimal(done["cost"]["total"]) == cost.total
    assert done["eval"]["metric"] == "mean_grader_score"
    assert 0 <= done["eval"]["before"] <= 1 and 0 <= done["eval"]["after"] <= 1


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed "
                    "(scripts/ensure-test-packages.sh installs it where it can)")
def test_a_python_grader_that_tries_to_escape_grades_honestly_in_the_sandbox(api, tmp_path):
    train = _upload(api, tmp_path, "rft-py.jsonl", reinforcement_rows(16, seed=1, split="train"))
    validation = _upload(api, tmp_path, "rft-py-valid.jsonl",
                         reinforcement_rows(10, seed=1, split="validation"))
    grader = {"type": "python", "name": "escape", "source": ESCAPING}

    job = api.create_job(model="posttrain-tiny", training_file=train["id"],
                         validation_file=validation["id"], seed=5,
                         method={"type": "reinforcement", "reinforcement": {
                             "grader": grader, "hyperparameters": {**HYPER,
                                                                   "eval_samples": 10}}})
    done = api.wait_job(job["id"])

    assert done["status"] == "succeeded", done["error"]
    warnings = [e["message"] for e in api.events(job["id"]) if e["level"] == "warn"
                and "No worker is online" not in e["message"]]  # presence, not grading
    assert not warnings, warnings
    # Every sample was graded inside the sandbox: none found the host, so no 1.0 rewards.
    assert done["eval"]["before"] in (0.25, 0.5) or 0.25 <= done["eval"]["before"] <= 0.5
    assert 0.25 <= done["eval"]["after"] <= 0.5
    metrics = [e["data"] for e in api.events(job["id"]) if e["type"] == "metrics"]
    assert metrics and all(m["train_mean_reward"] <= 0.5 for m in metrics)


def test_an_invalid_grader_is_refused_at_create_with_param(api, tmp_path):
    train = _upload(api, tmp_path, "rft-bad.jsonl", reinforcement_rows(12, seed=2, split="train"))

    response = api.http.post("/fine_tuning/jobs", json={
        "model": "posttrain-tiny", "training_file": train["id"],
        "method": {"type": "reinforcement", "reinforcement": {
            "grader": {**EXACT, "operation": "startswith"}}}})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "method.reinforcement.grader.operation"


def test_bad_reinforcement_rows_are_reported_with_their_line_numbers(api, tmp_path):
    rows = reinforcement_rows(12, seed=3, split="train")
    rows[1] = {"messages": [{"role": "user", "content": "1+1="},
                            {"role": "assistant", "content": "2"},
                            {"role": "user", "content": "and 2+2="}]}
    rows[5] = {"messages": [{"role": "user", "content": ""}]}

    file = api.upload(write_jsonl(tmp_path / "bad-rft.jsonl", rows))

    assert file["status"] == "error"
    assert [(e["line"], e["message"]) for e in file["validation"]["errors"]] == [
        (2, "reinforcement prompts must not contain assistant messages"),
        (6, "messages[0].content is empty")]


SIMILAR = {"type": "text_similarity", "name": "close", "input": "{{sample.output_text}}",
           "reference": "{{item.reference_answer}}", "evaluation_metric": "fuzzy_match"}
MULTI = {"type": "multi", "name": "mix", "graders": {"exact": EXACT, "close": SIMILAR},
         "calculate_output": "0.7 * exact + 0.3 * close"}


@pytest.mark.parametrize("grader", [SIMILAR, MULTI], ids=["text_similarity", "multi"])
def test_a_reinforcement_job_trains_with_each_grader_type(api, tmp_path, grader):
    train = _upload(api, tmp_path, "rft-g.jsonl", reinforcement_rows(16, seed=4, split="train"))
    validation = _upload(api, tmp_path, "rft-g-valid.jsonl",
                         reinforcement_rows(10, seed=4, split="validation"))

    job = api.create_job(model="posttrain-tiny", training_file=train["id"],
                         validation_file=validation["id"], seed=5,
                         method={"type": "reinforcement", "reinforcement": {
                             "grader": grader, "hyperparameters": {**HYPER,
                                                                   "eval_samples": 10}}})
    done = api.wait_job(job["id"])

    assert done["status"] == "succeeded", done["error"]
    assert done["method"]["reinforcement"]["grader"] == grader
    assert done["eval"]["metric"] == "mean_grader_score"
    assert done["usage"]["rollout_tokens"] > done["trained_tokens"] > 0
    metrics = [e["data"] for e in api.events(job["id"]) if e["type"] == "metrics"]
    assert metrics and all(0 <= m["train_mean_reward"] <= 1 for m in metrics)
