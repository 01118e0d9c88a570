"""Fine-tuning jobs API: OpenAI's job object, strict requests, tenancy, cancel, events."""

from __future__ import annotations

import json
import math

import pytest
from django.utils import timezone

from posttrain_server.files.models import File
from posttrain_server.jobs.hyperparameters import resolve_supervised
from posttrain_server.jobs.models import Attempt, Checkpoint, FineTuningJob, JobEvent
from posttrain_server.jobs.services import file_create_result

JOB_FIELDS = {"id", "object", "created_at", "finished_at", "estimated_finish", "status",
              "model", "fine_tuned_model", "organization_id", "training_file",
              "validation_file", "result_files", "trained_tokens", "hyperparameters", "method",
              "error", "seed", "suffix", "metadata", "integrations", "user_provided_suffix",
              "pool", "training_type", "parent_job", "lora", "learning_rate", "max_seq_length",
              "cancel_requested", "progress", "usage", "cost", "eval", "quoted_cost",
              "max_cost"}


def assert_error(response, status: int, *, param=None, code=None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    return error


def job_request(file_id: str, **overrides) -> dict:
    return {"model": "posttrain-tiny", "training_file": file_id,
            "method": {"type": "supervised",
                       "supervised": {"hyperparameters": {"n_epochs": 2}}},
            **overrides}


def hyper(**values) -> dict:
    return {"type": "supervised", "supervised": {"hyperparameters": values}}


def create(tenant, file_id: str, **overrides):
    return tenant.client.post("/v1/fine_tuning/jobs", job_request(file_id, **overrides),
                              format="json")


@pytest.fixture
def training_file(alice, processed_file) -> str:
    return processed_file(alice, 12)


@pytest.fixture
def job(alice, training_file) -> dict:
    response = create(alice, training_file)
    assert response.status_code == 200, response.json()
    return response.json()


# --- create ---------------------------------------------------------------------------------

def test_creating_a_job_answers_an_openai_job_object(
        alice, training_file, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as dispatched:
        response = create(alice, training_file, metadata={"team": "search"}, suffix="v1-a_b")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == JOB_FIELDS
    assert body["id"].startswith("ftjob-")
    assert body["object"] == "fine_tuning.job"
    assert body["status"] == "queued"
    assert body["model"] == "posttrain-tiny"
    assert body["training_file"] == training_file
    assert body["validation_file"] is None
    assert body["organization_id"] == alice.organization.id
    assert body["fine_tuned_model"] is None
    assert body["finished_at"] is None
    assert body["error"] is None
    assert body["result_files"] == []
    assert body["integrations"] == []
    assert body["suffix"] == "v1-a_b"
    assert body["metadata"] == {"team": "search"}
    assert isinstance(body["seed"], int)
    # 12 examples: batch_size auto = ceil(0.2% of 12) = 1
    assert body["hyperparameters"] == {"n_epochs": 2, "batch_size": 1,
                                       "learning_rate_multiplier": 1.0}
    assert body["method"] == {"type": "supervised", "supervised": {"hyperparameters": {
        "n_epochs": 2, "batch_size": 1, "learning_rate_multiplier": 1.0}}}
    assert body["pool"] == "cpu"
    assert body["training_type"] == "lora"
    assert body["learning_rate"] == pytest.approx(2e-3)
    assert body["cancel_requested"] is False
    assert body["usage"]["trained_tokens"] == 0
    assert body["usage"]["devices"] == 1
    assert float(body["usage"]["device_seconds"]) == 0
    assert body["cost"]["currency"] == "usd"
    for line in ("tokens", "compute", "total"):
        assert isinstance(body["cost"][line], str)
        assert float(body["cost"][line]) == 0

    job = FineTuningJob.objects.get(id=body["id"])
    assert job.organization == alice.organization
    attempts = list(Attempt.objects.filter(job=job))
    assert [(a.number, a.status) for a in attempts] == [(1, "dispatched")]
    assert len(dispatched) == 1


def test_the_create_response_matches_a_later_read(alice, job):
    assert alice.client.get(f"/v1/fine_tuning/jobs/{job['id']}").json() == job


@pytest.mark.parametrize(("examples", "batch_size"), [(500, 1), (501, 2), (1000, 2)])
def test_batch_size_auto_is_a_fifth_of_a_percent_of_the_examples(
        alice, processed_file, examples, batch_size):
    file_id = processed_file(alice, examples)

    body = create(alice, file_id, method=hyper()).json()

    assert body["hyperparameters"] == {"n_epochs": 3, "batch_size": batch_size,
                                       "learning_rate_multiplier": 1.0}


@pytest.mark.parametrize(("examples", "n_epochs", "batch_size"), [
    (1, 3, 1), (499, 3, 1), (32_000, 3, 64), (32_001, 3, 64), (50_000, 3, 64),
    (50_001, 1, 64), (10_000_000, 1, 64),
])
def test_auto_hyperparameters_follow_the_documented_rules(examples, n_epochs, batch_size):
    resolved = resolve_supervised({}, example_count=examples, base_learning_rate=2e-4)

    assert resolved == {"n_epochs": n_epochs, "batch_size": batch_size,
                        "learning_rate_multiplier": 1.0, "learning_rate": 2e-4}
    assert batch_size == min(64, max(1, math.ceil(examples * 0.002)))


def test_explicit_hyperparameters_are_kept(alice, training_file):
    body = create(alice, training_file, method=hyper(n_epochs=5, batch_size=4,
                                                     learning_rate_multiplier=0.5)).json()

    assert body["hyperparameters"] == {"n_epochs": 5, "batch_size": 4,
                                       "learning_rate_multiplier": 0.5}
    assert body["learning_rate"] == pytest.approx(1e-3)


def test_deprecated_top_level_hyperparameters_are_accepted(alice, training_file):
    request = {"model": "posttrain-tiny", "training_file": training_file,
               "hyperparameters": {"n_epochs": 4}}

    body = alice.client.post("/v1/fine_tuning/jobs", request, format="json").json()

    assert body["hyperparameters"]["n_epochs"] == 4
    assert body["method"]["type"] == "supervised"


@pytest.mark.parametrize(("overrides", "status", "param", "code"), [
    ({"model": "gpt-4o-mini-2024-07-18"}, 400, "model", "model_not_found"),
    ({"model": "/no/such/folder"}, 400, "model", "model_not_found"),
    ({"model": "ft:posttrain-tiny:alice::nope"}, 400, "model", "model_not_found"),
    ({"method": {"type": "foo"}}, 400, "method.type", None),
    ({"method": {"type": "dpo"}}, 400, "training_file", "invalid_file_format"),
    ({"method": {"type": "reinforcement"}}, 400, "method.reinforcement.grader",
     "missing_grader"),
    ({"method": hyper(n_epoch=2)}, 400, "method.supervised.hyperparameters.n_epoch", None),
    ({"method": hyper(n_epochs=0)}, 400, "method.supervised.hyperparameters.n_epochs", None),
    ({"method": hyper(n_epochs=1000)}, 400, "method.supervised.hyperparameters.n_epochs", None),
    ({"method": hyper(n_epochs=2.5)}, 400, "method.supervised.hyperparameters.n_epochs", None),
    ({"method": hyper(n_epochs=True)}, 400, "method.supervised.hyperparameters.n_epochs", None),
    ({"method": hyper(batch_size="big")}, 400, "method.supervised.hyperparameters.batch_size",
     None),
    ({"method": hyper(learning_rate_multiplier=0)}, 400,
     "method.supervised.hyperparameters.learning_rate_multiplier", None),
    ({"method": hyper(learning_rate_multiplier=-1)}, 400,
     "method.supervised.hyperparameters.learning_rate_multiplier", None),
    ({"method": {"type": "supervised", "supervised": {"hyperparameters": {}}, "extra": 1}},
     400, "method.extra", None),
    ({"hyperparameters": {"n_epochs": 2}}, 400, "hyperparameters", None),
    ({"learning_rate": 0.1}, 400, "learning_rate", None),
    ({"pool": "tpu"}, 400, "pool", "unknown_pool"),
    ({"suffix": "my model"}, 400, "suffix", None),
    ({"suffix": "x" * 65}, 400, "suffix", None),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, 400, "metadata", None),
    ({"metadata": {"k" * 65: "v"}}, 400, "metadata", None),
    ({"metadata": {"k": "v" * 513}}, 400, "metadata.k", None),
    ({"integrations": [{"type": "wandb"}]}, 400, "integrations", None),
    ({"training_type": "qlora"}, 400, "training_type", None),
    ({"seed": -1}, 400, "seed", None),
    ({"lr_scheduler": "step"}, 400, "lr_scheduler", None),
    ({"warmup_ratio": 0.9}, 400, "warmup_ratio", None),
    ({"max_seq_length": 8}, 400, "max_seq_length", None),
    ({"lora": {"r": 0}}, 400, "lora.r", None),
    ({"lora": {"target_modules": []}}, 400, "lora.target_modules", None),
    ({"training_file": "file-doesnotexist"}, 404, "training_file", None),
    ({"validation_file": "file-doesnotexist"}, 404, "validation_file", None),
])
def test_an_invalid_request_is_refused_with_the_param_and_writes_no_job(
        alice, training_file, overrides, status, param, code):
    response = create(alice, training_file, **overrides)

    assert_error(response, status, param=param, code=code)
    assert not FineTuningJob.objects.exists()
    assert not Attempt.objects.exists()


@pytest.mark.parametrize("missing", ["model", "training_file"])
def test_a_request_without_a_required_field_is_refused(alice, training_file, missing):
    request = job_request(training_file)
    del request[missing]

    response = alice.client.post("/v1/fine_tuning/jobs", request, format="json")

    assert_error(response, 400, param=missing)
    assert not FineTuningJob.objects.exists()


def test_a_body_that_is_not_json_is_a_400_envelope(alice):
    response = alice.client.post("/v1/fine_tuning/jobs", "{not json",
                                 content_type="application/json")

    assert_error(response, 400)


def test_another_organizations_file_is_not_found_and_not_leaked(
        alice, bob, training_file):
    response = create(bob, training_file)

    error = assert_error(response, 404, param="training_file")
    assert "alice" not in error["message"]
    assert alice.organization.id not in error["message"]
    assert not FineTuningJob.objects.exists()


def test_a_file_still_being_validated_is_not_ready(alice, jsonl, upload_file):
    file_id = upload_file(alice.client, jsonl(12)).json()["id"]

    assert_error(create(alice, file_id), 400, param="training_file", code="file_not_ready")
    assert not FineTuningJob.objects.exists()


def test_an_invalid_file_is_refused(alice, processed_file):
    file_id = processed_file(alice, content=b"oops\n")
    assert File.objects.get(id=file_id).status == "error"

    error = assert_error(create(alice, file_id), 400, param="training_file",
                         code="invalid_file")
    assert "line 1" in error["message"]
    assert not FineTuningJob.objects.exists()


def test_a_result_file_cannot_be_trained_on(alice):
    result = file_create_result(organization=alice.organization, filename="r.csv",
                                content=b"step\n1\n")

    assert_error(create(alice, result.id), 400, param="training_file",
                 code="invalid_file_purpose")


def test_a_validation_file_of_another_organization_is_not_found(
        alice, bob, processed_file, training_file):
    bobs = processed_file(bob, 12)

    assert_error(create(alice, training_file, validation_file=bobs), 404,
                 param="validation_file")
    assert not FineTuningJob.objects.exists()


def test_a_file_used_by_an_active_job_cannot_be_deleted(alice, job):
    response = alice.client.delete(f"/v1/files/{job['training_file']}")

    assert_error(response, 409, param="file_id", code="file_in_use")
    assert response["x-should-retry"] == "false"


def test_creating_a_job_with_an_idempotency_key_creates_it_once(
        alice, training_file, django_capture_on_commit_callbacks):
    headers = {"Idempotency-Key": "job-1"}
    with django_capture_on_commit_callbacks() as dispatched:
        first = alice.client.post("/v1/fine_tuning/jobs", job_request(training_file),
                                  format="json", headers=headers)
        second = alice.client.post("/v1/fine_tuning/jobs", job_request(training_file),
                                   format="json", headers=headers)

    assert first.status_code == second.status_code == 200
    assert second.json()["id"] == first.json()["id"]
    assert FineTuningJob.objects.count() == 1
    assert len(dispatched) == 1


# --- list and retrieve ----------------------------------------------------------------------

def test_the_list_pages_newest_first(alice, training_file):
    ids = [create(alice, training_file).json()["id"] for _ in range(3)]

    first = alice.client.get("/v1/fine_tuning/jobs", {"limit": 2}).json()
    second = alice.client.get("/v1/fine_tuning/jobs",
                              {"limit": 2, "after": first["last_id"]}).json()

    assert [item["id"] for item in first["data"]] == [ids[2], ids[1]]
    assert first["has_more"] is True
    assert [item["id"] for item in second["data"]] == [ids[0]]
    assert second["has_more"] is False
    assert_error(alice.client.get("/v1/fine_tuning/jobs", {"limit": "x"}), 400, param="limit")


def test_the_list_filters_on_metadata(alice, training_file):
    search = create(alice, training_file, metadata={"team": "search", "run": "1"}).json()
    create(alice, training_file, metadata={"team": "ads"})
    create(alice, training_file)

    def listed(params):
        response = alice.client.get("/v1/fine_tuning/jobs", params)
        assert response.status_code == 200, response.json()
        return [item["id"] for item in response.json()["data"]]

    assert listed({"metadata[team]": "search"}) == [search["id"]]
    assert listed({"metadata[team]": "search", "metadata[run]": "1"}) == [search["id"]]
    assert listed({"metadata[team]": "search", "metadata[run]": "2"}) == []
    assert listed({"metadata[team]": "nobody"}) == []
    assert len(listed({})) == 3


@pytest.mark.parametrize(("key", "value"), [
    ("team__startswith", "se"),  # matches "search" today
    ("team__regex", "^s"),  # a user-supplied regular expression runs in the database
    ("team__contains", "search"),  # SQLite: 500 (unsupported lookup)
    ("team__isnull", ""),  # PostgreSQL: 500 (non-boolean isnull)
])
def test_a_metadata_filter_key_is_only_ever_a_key(alice, training_file, key, value):
    create(alice, training_file, metadata={"team": "search"})

    response = alice.client.get("/v1/fine_tuning/jobs", {f"metadata[{key}]": value})

    assert response.status_code == 200
    assert response.json()["data"] == []


def test_retrieve_returns_the_job(alice, job):
    response = alice.client.get(f"/v1/fine_tuning/jobs/{job['id']}")

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == job["id"]
    assert body["status"] == "queued"
    assert body["hyperparameters"] == job["hyperparameters"]
    assert body["cost"]["total"] == "0.000000"


def test_an_unknown_job_is_404(alice):
    assert_error(alice.client.get("/v1/fine_tuning/jobs/ftjob-nope"), 404,
                 param="fine_tuning_job_id")


def test_another_organization_cannot_reach_a_job(alice, bob, job):
    job_id = job["id"]
    Checkpoint.objects.create(job_id=job_id, attempt=1, step=10, storage_key="jobs/x/c.tar")
    checkpoint = Checkpoint.objects.get(job_id=job_id)

    for response in (
        bob.client.get(f"/v1/fine_tuning/jobs/{job_id}"),
        bob.client.post(f"/v1/fine_tuning/jobs/{job_id}/cancel"),
        bob.client.get(f"/v1/fine_tuning/jobs/{job_id}/events"),
        bob.client.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints"),
        bob.client.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints/{checkpoint.id}/content"),
    ):
        error = assert_error(response, 404, param="fine_tuning_job_id")
        assert "alice" not in error["message"]

    assert bob.client.get("/v1/fine_tuning/jobs").json()["data"] == []
    assert FineTuningJob.objects.get(id=job_id).status == "queued"
    assert alice.client.get(f"/v1/fine_tuning/jobs/{job_id}/checkpoints").json()["data"][0][
        "id"] == checkpoint.id


# --- cancel ---------------------------------------------------------------------------------

def test_cancelling_a_queued_job_stops_it_at_once_and_bills_nothing(alice, job):
    response = alice.client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "cancelled"
    assert body["finished_at"] is not None
    assert body["cost"]["tokens"] == "0.000000"
    assert body["cost"]["compute"] == "0.000000"
    assert body["cost"]["total"] == "0.000000"
    assert body["cost"]["price_version"]
    assert Attempt.objects.get(job_id=job["id"], number=1).status == "cancelled"
    assert JobEvent.objects.filter(
        job_id=job["id"], message="Fine-tuning job cancelled before it started").count() == 1


def test_cancelling_a_finished_job_is_a_409_not_to_retry(alice, job):
    alice.client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")

    response = alice.client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel")

    assert_error(response, 409, param="fine_tuning_job_id", code="job_not_cancellable")
    assert response["x-should-retry"] == "false"


def test_cancelling_a_running_job_asks_the_trainer_to_stop(alice, job):
    FineTuningJob.objects.filter(id=job["id"]).update(status="running")

    first = alice.client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").json()
    second = alice.client.post(f"/v1/fine_tuning/jobs/{job['id']}/cancel").json()

    assert first["status"] == second["status"] == "running"
    assert first["cancel_requested"] is True
    assert JobEvent.objects.filter(job_id=job["id"],
                                   message__startswith="Cancellation requested").count() == 1


# --- events and checkpoints -----------------------------------------------------------------

def test_events_are_listed_newest_first_or_oldest_first(alice, job):
    now = timezone.now()
    created = f"Created fine-tuning job: {job['id']}"
    JobEvent.objects.filter(job_id=job["id"], message=created).update(
        created_at=now - timezone.timedelta(minutes=2))
    JobEvent.objects.filter(job_id=job["id"], message__startswith="Job queued").update(
        created_at=now - timezone.timedelta(minutes=1))
    JobEvent.objects.create(job_id=job["id"], message="latest")
    url = f"/v1/fine_tuning/jobs/{job['id']}/events"

    newest = alice.client.get(url).json()
    oldest = alice.client.get(url, {"order": "asc"}).json()

    messages = [event["message"] for event in newest["data"]]
    assert len(messages) == 4
    assert messages[0] == "latest"
    assert messages[3] == created
    assert messages[2].startswith("Job queued on pool 'cpu'")
    assert messages[1].startswith("No worker is online for pool 'cpu' yet")
    assert [event["message"] for event in oldest["data"]] == messages[::-1]
    event = newest["data"][0]
    assert set(event) == {"id", "object", "created_at", "level", "message", "type", "data"}
    assert event["id"].startswith("ftevent-")
    assert event["object"] == "fine_tuning.job.event"
    assert event["level"] == "info"


def test_events_page_with_a_cursor(alice, job):
    for n in range(4):
        JobEvent.objects.create(job_id=job["id"], message=f"event {n}")
    url = f"/v1/fine_tuning/jobs/{job['id']}/events"
    everything = [event["id"] for event in alice.client.get(url, {"order": "asc"}).json()["data"]]

    first = alice.client.get(url, {"order": "asc", "limit": 4}).json()
    rest = alice.client.get(url, {"order": "asc", "limit": 4,
                                  "after": first["last_id"]}).json()

    assert first["has_more"] is True
    assert [e["id"] for e in first["data"]] + [e["id"] for e in rest["data"]] == everything


def test_checkpoints_are_listed_with_their_model_names(alice, job):
    Checkpoint.objects.create(job_id=job["id"], attempt=1, step=20,
                              storage_key="jobs/x/step-20.tar", trained_tokens=200,
                              metrics={"train_loss": 0.5})

    body = alice.client.get(f"/v1/fine_tuning/jobs/{job['id']}/checkpoints").json()

    (checkpoint,) = body["data"]
    assert checkpoint["object"] == "fine_tuning.job.checkpoint"
    assert checkpoint["fine_tuning_job_id"] == job["id"]
    assert checkpoint["step_number"] == 20
    assert checkpoint["trained_tokens"] == 200
    assert checkpoint["metrics"] == {"train_loss": 0.5}
    assert checkpoint["fine_tuned_model_checkpoint"].startswith("ft:posttrain-tiny:alice:")
    assert checkpoint["fine_tuned_model_checkpoint"].endswith(":ckpt-step-20")


# --- models, routes, docs -------------------------------------------------------------------

def test_the_models_list_has_the_builtin_tiny_model(alice):
    response = alice.client.get("/v1/models")

    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list"
    assert {"id": "posttrain-tiny", "object": "model", "created": 0,
            "owned_by": "posttrain"} in body["data"]
    assert alice.client.get("/v1/models/posttrain-tiny").json()["id"] == "posttrain-tiny"
    assert_error(alice.client.get("/v1/models/no-such-model"), 404, param="model",
                 code="model_not_found")


def test_models_need_a_key(db, anonymous):
    assert_error(anonymous.get("/v1/models"), 401, code="invalid_api_key")


@pytest.mark.parametrize(("method", "path"), [
    ("get", "/v1/nothing-here"),
    ("get", "/v1/fine_tuning/jobs/ftjob-x/unknown"),
    ("post", "/v1/chat/completions"),
])
def test_an_unknown_api_route_is_a_json_404(alice, method, path):
    response = getattr(alice.client, method)(path)

    error = assert_error(response, 404)
    assert path in error["message"]


def test_a_wrong_method_is_a_json_405(alice, job):
    assert_error(alice.client.put(f"/v1/fine_tuning/jobs/{job['id']}"), 405)


def test_the_docs_page_is_html(db, anonymous):
    response = anonymous.get("/docs")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"swagger" in response.content.lower()


def test_the_openapi_schema_describes_the_api(db, anonymous):
    assert anonymous.get("/openapi.json").status_code == 200
    response = anonymous.get("/openapi.json", {"format": "json"})

    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    assert "/v1/fine_tuning/jobs" in schema["paths"]
    assert "/v1/files" in schema["paths"]
    assert not any(path.startswith("/internal") for path in schema["paths"])


def test_openapi_json_is_json(db, anonymous):
    response = anonymous.get("/openapi.json")

    assert "json" in response["Content-Type"]
    assert json.loads(response.content)["openapi"].startswith("3.")
