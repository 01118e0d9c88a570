"""A chain of three jobs: SFT, then DPO from the SFT model, then RL from the DPO model."""

from __future__ import annotations

import pytest

from workers.toychain import preference_rows, reinforcement_rows
from workers.toytask import addition_rows, write_jsonl

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXACT = {"type": "string_check", "input": "{{sample.output_text}}",
         "reference": "{{item.reference_answer}}", "operation": "eq"}


def _file(api, path, rows):
    file = api.upload(write_jsonl(path, rows))
    assert file["status"] == "processed", file
    return file["id"]


def test_sft_then_dpo_then_reinforcement_each_continue_from_the_last(api, tmp_path):
    sft = api.wait_job(api.create_job(
        model="posttrain-tiny", seed=1, training_type="full", eval_samples=20,
        training_file=_file(api, tmp_path / "sft.jsonl", addition_rows(160, 0, "train")),
        method={"type": "supervised", "supervised": {"hyperparameters": {
            "n_epochs": 1, "batch_size": 16}}})["id"])
    assert sft["status"] == "succeeded", sft["error"]

    dpo = api.wait_job(api.create_job(
        model=sft["fine_tuned_model"], seed=1, eval_samples=12,
        training_file=_file(api, tmp_path / "dpo.jsonl", preference_rows(48, 0, "train")),
        method={"type": "dpo", "dpo": {"hyperparameters": {"n_epochs": 1,
                                                           "batch_size": 16}}})["id"])
    assert dpo["status"] == "succeeded", dpo["error"]
    assert dpo["model"] == sft["fine_tuned_model"]
    assert (sft["parent_job"], dpo["parent_job"]) == (None, sft["id"])

    rl = api.wait_job(api.create_job(
        model=dpo["fine_tuned_model"], seed=1,
        training_file=_file(api, tmp_path / "rl.jsonl", reinforcement_rows(24, 0, "train")),
        method={"type": "reinforcement", "reinforcement": {"grader": EXACT, "hyperparameters": {
            "n_epochs": 1, "batch_size": 8, "generations_per_prompt": 4,
            "max_completion_length": 4, "eval_samples": 10}}})["id"])
    assert rl["status"] == "succeeded", rl["error"]
    assert rl["model"] == dpo["fine_tuned_model"]
    assert rl["parent_job"] == dpo["id"]

    # Each stage scored its own starting model: the RL job's "before" is the DPO model's
    # greedy answers, so it can only be measured after loading SFT + DPO adapter merged.
    for job, metric in ((sft, "exact_match"), (dpo, "preference_accuracy"),
                        (rl, "mean_grader_score")):
        assert job["eval"]["metric"] == metric
        assert job["eval"]["gain_per_dollar"] is not None
    assert {m["id"] for m in api.http.get("/models").json()["data"]} >= {
        sft["fine_tuned_model"], dpo["fine_tuned_model"], rl["fine_tuned_model"]}
