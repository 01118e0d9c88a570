"""Creating DPO and reinforcement jobs: the right file format, resolved hyperparameters,
and graders checked before any job exists, with ``param`` pointing at the bad field."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from posttrain_server.jobs.models import FineTuningJob

STRING_CHECK = {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
                "reference": "{{item.reference_answer}}", "operation": "eq"}


def preference_jsonl(count: int = 12) -> bytes:
    rows = [{"input": {"messages": [{"role": "user", "content": f"{i}+{i}="}]},
             "preferred_output": [{"role": "assistant", "content": str(2 * i)}],
             "non_preferred_output": [{"role": "assistant", "content": str(2 * i + 1)}]}
            for i in range(count)]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def rft_jsonl(count: int = 12) -> bytes:
    rows = [{"messages": [{"role": "user", "content": f"{i}+{i}="}],
             "reference_answer": str(2 * i)} for i in range(count)]
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def create(tenant, file_id: str, method: dict):
    return tenant.client.post("/v1/fine_tuning/jobs", {"model": "posttrain-tiny",
                                                       "training_file": file_id,
                                                       "method": method}, format="json")


def rl(grader, **hyperparameters) -> dict:
    return {"type": "reinforcement",
            "reinforcement": {"grader": grader, "hyperparameters": hyperparameters}}


def test_a_dpo_job_is_created_from_a_preference_file_with_beta_resolved(alice, processed_file):
    file_id = processed_file(alice, content=preference_jsonl())

    response = create(alice, file_id, {"type": "dpo", "dpo": {"hyperparameters": {
        "beta": 0.2, "n_epochs": 2}}})

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["method"]["type"] == "dpo"
    assert body["method"]["dpo"]["hyperparameters"]["beta"] == 0.2
    assert body["hyperparameters"]["n_epochs"] == 2


def test_a_dpo_job_on_a_chat_file_is_refused(alice, processed_file):
    file_id = processed_file(alice, 12)

    response = create(alice, file_id, {"type": "dpo"})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "training_file"
    assert "needs a preference dataset" in response.json()["error"]["message"]


def test_a_reinforcement_job_keeps_its_grader_and_resolves_our_hyperparameters(
        alice, processed_file):
    file_id = processed_file(alice, content=rft_jsonl())

    response = create(alice, file_id, rl(STRING_CHECK, generations_per_prompt=4))

    assert response.status_code == 200, response.json()
    method = response.json()["method"]["reinforcement"]
    assert method["grader"] == STRING_CHECK
    assert method["hyperparameters"]["generations_per_prompt"] == 4
    assert method["hyperparameters"]["temperature"] == 1.0
    assert response.json()["usage"]["rollout_tokens"] == 0


@pytest.mark.parametrize(("grader", "param"), [
    ({**STRING_CHECK, "operation": "contains"}, "method.reinforcement.grader.operation"),
    ({**STRING_CHECK, "type": "score_model"}, "method.reinforcement.grader.type"),
    ({**STRING_CHECK, "reference": "{{ reference }}"}, "method.reinforcement.grader.reference"),
    ({**STRING_CHECK, "input": "{{sample.output}}"}, "method.reinforcement.grader.input"),
    ({**STRING_CHECK, "range": [1, 0]}, "method.reinforcement.grader.range"),
    ({"type": "text_similarity", "input": "{{sample.output_text}}", "reference": "x",
      "evaluation_metric": "rouge_9"}, "method.reinforcement.grader.evaluation_metric"),
    ({"type": "python", "source": "def grade(sample, item) return 1"},
     "method.reinforcement.grader.source"),
    ({"type": "python", "source": "def grade(s, i):\n    return 1\n" + "#" * 300_000},
     "method.reinforcement.grader.source"),
    ({"type": "multi", "graders": {"a": STRING_CHECK},
      "calculate_output": "__import__('os').system('x')"},
     "method.reinforcement.grader.calculate_output"),
    ({"type": "multi", "graders": {"a": STRING_CHECK}, "calculate_output": "a + b"},
     "method.reinforcement.grader.calculate_output"),
    ({"type": "multi", "graders": {"a": {**STRING_CHECK, "operation": "x"}},
      "calculate_output": "a"}, "method.reinforcement.grader.graders.a.operation"),
    ("string_check", "method.reinforcement.grader"),
])
def test_an_invalid_grader_is_refused_with_param_pointing_at_it_and_writes_no_job(
        alice, processed_file, grader, param):
    file_id = processed_file(alice, content=rft_jsonl())

    response = create(alice, file_id, rl(grader))

    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["param"] == param
    assert error["code"] in {"invalid_grader", None}
    assert not FineTuningJob.objects.exists()


def test_a_reinforcement_job_on_a_chat_file_is_refused(alice, processed_file):
    file_id = processed_file(alice, 12)

    response = create(alice, file_id, rl(STRING_CHECK))

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_file_format"


def test_the_worker_message_carries_the_method_settings(alice, processed_file):
    from posttrain_server.jobs.dispatch import train_message
    from posttrain_server.jobs.models import Attempt

    file_id = processed_file(alice, content=rft_jsonl())
    body = {"model": "posttrain-tiny", "training_file": file_id, "eval_samples": 50,
            "method": rl(STRING_CHECK, kl_beta=0.04, max_completion_length=5)}
    job_id = alice.client.post("/v1/fine_tuning/jobs", body, format="json").json()["id"]
    job = FineTuningJob.objects.get(id=job_id)

    message = train_message(job, Attempt.objects.get(job=job), "token")

    assert message.method == "reinforcement"
    assert message.reinforcement.grader == STRING_CHECK
    assert message.reinforcement.kl_beta == 0.04
    assert message.reinforcement.max_completion_length == 5
    assert message.eval_samples == 50  # auto: the job's eval_samples, as for other methods
    assert message.dpo is None


def test_a_reinforcement_estimate_quotes_rollouts_exactly_in_part_and_bounds_the_rest(
        alice, processed_file):
    """Prompts are known before the run, generations are not: the quote prices the bound."""
    file_id = processed_file(alice, content=rft_jsonl(12))
    body = {"model": "posttrain-tiny", "training_file": file_id, "seed": 3,
            "method": rl(STRING_CHECK, n_epochs=2, batch_size=2, generations_per_prompt=4,
                         max_completion_length=5, eval_samples=2)}

    estimate = alice.client.post("/v1/fine_tuning/jobs/estimate", body, format="json").json()
    prompts = alice.client.post("/v1/fine_tuning/jobs/estimate", {
        **body, "method": {"type": "reinforcement", "reinforcement": {
            "grader": STRING_CHECK, "hyperparameters": {
                "n_epochs": 2, "batch_size": 2, "generations_per_prompt": 2,
                "max_completion_length": 5, "eval_samples": 2}}}}, format="json").json()

    kept_samples = 11 * 2 * 4  # 12 rows - 1 held out (at most a tenth), 2 epochs, 4 samples
    assert estimate["trained_tokens"] == kept_samples * 5  # every sample at 5 tokens
    assert estimate["rollout_tokens_read"] == 2 * prompts["rollout_tokens_read"] > 0
    assert estimate["rollout_tokens"] == estimate["rollout_tokens_read"] + kept_samples * 5
    cpu = next(pool for pool in estimate["pools"] if pool["pool"] == "cpu")
    assert cpu["rollout_tokens"] == estimate["rollout_tokens"]
    assert cpu["cost"]["tokens_by_kind"]["rollout_tokens"] != "0.000000"
    # The time model reads the rollouts, so four samples a prompt take longer than two.
    assert Decimal(cpu["wall_seconds"]) > Decimal(next(
        pool for pool in prompts["pools"] if pool["pool"] == "cpu")["wall_seconds"])
