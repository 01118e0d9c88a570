"""``/v1/fine_tuning/alpha/graders/run`` and ``validate``: try a grader on one sample first."""

from __future__ import annotations

import shutil

import pytest

EXACT = {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
         "reference": "{{item.reference_answer}}", "operation": "eq"}


def run(tenant, **body):
    return tenant.client.post("/v1/fine_tuning/alpha/graders/run", body, format="json")


def test_run_scores_one_sample_in_openais_shape(alice):
    response = run(alice, grader=EXACT, model_sample="46", item={"reference_answer": "46"})

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["reward"] == 1.0
    assert body["metadata"]["type"] == "string_check"
    assert body["metadata"]["name"] == "exact"
    assert not any(v for k, v in body["metadata"]["errors"].items())
    assert set(body) >= {"reward", "metadata", "sub_rewards",
                         "model_grader_token_usage_per_model"}


def test_run_reports_a_missing_item_key_as_an_invalid_variable_error(alice):
    body = run(alice, grader=EXACT, model_sample="46", item={}).json()

    assert body["reward"] == 0.0
    assert body["metadata"]["errors"]["invalid_variable_error"] is True


def test_run_returns_the_sub_rewards_of_a_multi_grader(alice):
    grader = {"type": "multi", "calculate_output": "0.5 * exact + 0.5 * fuzzy",
              "graders": {"exact": EXACT, "fuzzy": {
                  "type": "text_similarity", "input": "{{sample.output_text}}",
                  "reference": "{{item.reference_answer}}",
                  "evaluation_metric": "fuzzy_match"}}}

    body = run(alice, grader=grader, model_sample="47", item={"reference_answer": "46"}).json()

    assert body["sub_rewards"]["exact"] == 0.0
    assert body["sub_rewards"]["fuzzy"] == pytest.approx(0.5)
    assert body["reward"] == pytest.approx(0.25)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_run_executes_python_graders_in_the_sandbox(alice):
    grader = {"type": "python", "name": "py", "source":
              "import os\ndef grade(sample, item):\n"
              "    return 0.0 if os.path.exists('/etc/shadow') else 0.75\n"}

    body = run(alice, grader=grader, model_sample="x", item={}).json()

    assert body["reward"] == 0.75


def test_run_refuses_an_invalid_grader_with_param(alice):
    response = run(alice, grader={**EXACT, "operation": "startswith"}, model_sample="x")

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "grader.operation"


def test_validate_returns_the_grader_or_points_at_the_bad_field(alice):
    ok = alice.client.post("/v1/fine_tuning/alpha/graders/validate", {"grader": EXACT},
                           format="json")
    bad = alice.client.post("/v1/fine_tuning/alpha/graders/validate",
                            {"grader": {"type": "multi", "graders": {"a": EXACT},
                                        "calculate_output": "a.real"}}, format="json")

    assert ok.status_code == 200 and ok.json() == {"grader": EXACT}
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "grader.calculate_output"


def test_the_graders_endpoints_need_an_api_key(client):
    response = client.post("/v1/fine_tuning/alpha/graders/validate", {"grader": EXACT},
                           content_type="application/json")

    assert response.status_code == 401
