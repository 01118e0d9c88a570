"""The official ``openai`` package, pointed at Posttrain by ``base_url``, works unchanged."""

from __future__ import annotations

import time

import openai
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_the_official_openai_client_drives_a_fine_tuning_job(api, toy_data):
    client = openai.OpenAI(api_key=api.key, base_url=f"{api.base_url}/v1", max_retries=0)

    with toy_data["train"].open("rb") as handle:
        uploaded = client.files.create(file=handle, purpose="fine-tune")
    assert uploaded.id.startswith("file-")
    for _ in range(100):
        if client.files.retrieve(uploaded.id).status == "processed":
            break
        time.sleep(0.2)
    assert client.files.retrieve(uploaded.id).status == "processed"
    assert uploaded.id in [file.id for file in client.files.list()]

    job = client.fine_tuning.jobs.create(
        model="posttrain-tiny", training_file=uploaded.id, seed=3, suffix="oai",
        method={"type": "supervised", "supervised": {"hyperparameters": {
            "n_epochs": 1, "batch_size": 16}}},
        extra_body={"eval_samples": 10},
    )
    assert job.id.startswith("ftjob-") and job.status == "queued"
    assert client.fine_tuning.jobs.retrieve(job.id).model == "posttrain-tiny"
    assert job.id in [item.id for item in client.fine_tuning.jobs.list(limit=5)]

    for _ in range(600):
        job = client.fine_tuning.jobs.retrieve(job.id)
        if job.status in {"succeeded", "failed", "cancelled"}:
            break
        time.sleep(0.3)
    assert job.status == "succeeded", job.error
    assert job.fine_tuned_model and job.trained_tokens > 0

    events = client.fine_tuning.jobs.list_events(job.id, limit=100)
    assert any(event.type == "metrics" for event in events.data)
    assert events.data[0].message.startswith("New fine-tuned model created")
    checkpoints = client.fine_tuning.jobs.checkpoints.list(job.id)
    assert checkpoints.data[0].fine_tuned_model_checkpoint.startswith(job.fine_tuned_model)
    assert checkpoints.data[0].step_number > 0

    model_ids = [model.id for model in client.models.list()]
    assert "posttrain-tiny" in model_ids and job.fine_tuned_model in model_ids

    # Cancel: a job on a pool with no worker waits queued, and cancels at once.
    waiting = client.fine_tuning.jobs.create(model="posttrain-tiny", training_file=uploaded.id,
                                             extra_body={"pool": "rubin"})
    cancelled = client.fine_tuning.jobs.cancel(waiting.id)
    assert cancelled.status == "cancelled"

    with pytest.raises(openai.NotFoundError) as missing:
        client.fine_tuning.jobs.retrieve("ftjob-doesnotexist")
    assert missing.value.code is None or isinstance(missing.value.code, str)
    with pytest.raises(openai.BadRequestError) as bad:
        client.fine_tuning.jobs.create(model="no-such-model", training_file=uploaded.id)
    assert bad.value.param == "model" and bad.value.code == "model_not_found"
