"""The SDK and the CLI against the live stack (gunicorn, platform worker, a real training worker
on the real broker): upload, create, wait with progress, follow events, download the adapter,
cancel, and the exit code of a job that really failed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

import posttrain
from posttrain import AsyncPosttrain, Posttrain
from posttrain.types import FineTuningJob
from workers import env as posttrain_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SMALL_SFT = {"type": "supervised", "supervised": {"hyperparameters": {
    "n_epochs": 1, "batch_size": 16}}}
POSTTRAIN = shutil.which("posttrain", path=str(Path(sys.executable).parent))


@pytest.fixture
def client(api) -> Posttrain:
    with Posttrain(api_key=api.key, base_url=f"{api.base_url}/v1") as sdk:
        yield sdk


def test_the_sdk_uploads_trains_waits_follows_downloads_and_cancels(client, toy_data,
                                                                   tmp_path):
    uploaded = client.files.upload(toy_data["train"])  # waits for validation
    assert uploaded.status == "processed"
    assert uploaded.validation.example_count == 240
    assert uploaded.id in [file.id for file in client.files.list()]

    job = client.fine_tuning.jobs.create(
        model="posttrain-tiny", training_file=uploaded.id, method=SMALL_SFT, seed=5,
        suffix="sdk", metadata={"suite": "sdk"}, eval_samples=10)
    assert job.status == "queued" and job.pool == "cpu"

    seen: list[FineTuningJob] = []
    done = client.fine_tuning.jobs.wait(job.id, progress=seen.append, poll_interval=0.2)
    assert done.status == "succeeded", done.error
    assert seen[-1].status == "succeeded"
    assert {update.status for update in seen} <= {"queued", "running", "succeeded"}
    assert done.fine_tuned_model and done.trained_tokens > 0
    assert isinstance(done.cost.total, Decimal) and done.cost.total > 0
    assert done.cost.tokens + done.cost.compute == done.cost.total
    assert done.usage.device_seconds > 0
    assert done.eval.metric == "exact_match"

    # progress=True draws the bar (rich) and returns the same terminal job at once.
    assert client.fine_tuning.jobs.wait(job.id, progress=True).id == job.id

    events = list(client.fine_tuning.jobs.events(job.id, follow=True))
    messages = [event.message for event in events]
    assert messages[0].startswith("Created fine-tuning job")
    assert messages[-1].startswith("New fine-tuned model created")
    assert any(event.type == "metrics" for event in events)
    assert len({event.id for event in events}) == len(events)
    newest_first = list(client.fine_tuning.jobs.events(job.id, order="desc"))
    assert [event.id for event in newest_first] == [event.id for event in reversed(events)]

    checkpoints = list(client.fine_tuning.jobs.checkpoints(job.id))
    assert checkpoints and checkpoints[0].step_number > 0
    checkpoint_dir = client.fine_tuning.jobs.download_checkpoint(
        job.id, checkpoints[0].id, tmp_path / "checkpoint")
    assert any(checkpoint_dir.iterdir())

    assert done.fine_tuned_model in [model.id for model in client.models.list()]
    adapter = client.models.download(done.fine_tuned_model, tmp_path / "adapter")
    names = {path.name for path in adapter.rglob("*") if path.is_file()}
    assert "adapter_config.json" in names, names
    assert any(name.endswith(".safetensors") for name in names), names

    # The same Idempotency-Key replays the first job instead of starting a second one.
    first = client.fine_tuning.jobs.create(model="posttrain-tiny", training_file=uploaded.id,
                                           pool="rubin", idempotency_key="sdk-e2e-once")
    again = client.fine_tuning.jobs.create(model="posttrain-tiny", training_file=uploaded.id,
                                           pool="rubin", idempotency_key="sdk-e2e-once")
    assert again.id == first.id
    # Cancel: nothing serves the rubin pool here, so the job is queued and cancels at once.
    assert client.fine_tuning.jobs.cancel(first.id).status == "cancelled"
    with pytest.raises(posttrain.ConflictError) as conflict:
        client.fine_tuning.jobs.cancel(first.id)
    assert conflict.value.status_code == 409

    with pytest.raises(posttrain.NotFoundError) as missing:
        client.fine_tuning.jobs.retrieve("ftjob-doesnotexist")
    assert missing.value.request_id == missing.value.response.headers.get("x-request-id")
    with pytest.raises(posttrain.BadRequestError) as bad:
        client.fine_tuning.jobs.create(model="no-such-model", training_file=uploaded.id)
    assert (bad.value.param, bad.value.code) == ("model", "model_not_found")

    async def async_side() -> None:
        async with AsyncPosttrain(api_key=client.api_key, base_url=client.base_url) as aclient:
            fetched = await aclient.fine_tuning.jobs.retrieve(job.id)
            assert fetched.fine_tuned_model == done.fine_tuned_model
            assert job.id in [item.id async for item in aclient.fine_tuning.jobs.list()]

    asyncio.run(async_side())


def test_an_invalid_upload_raises_with_line_numbers(client, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}, '
                   '{"role": "assistant", "content": ""}]}\nnot json\n')

    with pytest.raises(posttrain.FileValidationError) as raised:
        client.files.upload(bad)

    lines = {error["line"] for error in raised.value.errors}
    assert {1, 2} <= lines
    assert raised.value.file.status == "error"


def cli(api, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "POSTTRAIN_API_KEY": api.key, "POSTTRAIN_BASE_URL": f"{api.base_url}/v1"}
    return subprocess.run([POSTTRAIN, *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def test_the_cli_uploads_follows_lists_and_downloads(api, toy_data, tmp_path):
    upload = cli(api, "files", "upload", str(toy_data["train"]), "--json")
    assert upload.returncode == 0, upload.stderr
    file_id = json.loads(upload.stdout)["id"]

    created = cli(api, "jobs", "create", "--model", "posttrain-tiny", "--training-file", file_id,
                  "--n-epochs", "1", "--batch-size", "16", "--eval-samples", "10",
                  "--suffix", "cli", "--follow", "--json")
    assert created.returncode == 0, created.stderr
    documents = [json.loads(line) for line in created.stdout.splitlines()]
    events = [doc["event"] for doc in documents if "event" in doc]
    job = documents[-1]["job"]
    assert job["status"] == "succeeded"
    assert events[-1]["message"].startswith("New fine-tuned model created")
    assert any(event["type"] == "metrics" for event in events)
    assert Decimal(job["cost"]["total"]) > 0  # money stays a decimal string in JSON

    listed = cli(api, "jobs", "list", "--json")
    assert job["id"] in [item["id"] for item in json.loads(listed.stdout)]
    shown = cli(api, "jobs", "get", job["id"])
    assert shown.returncode == 0 and "succeeded" in shown.stdout and "$" in shown.stdout
    waited = cli(api, "jobs", "wait", job["id"])
    assert waited.returncode == 0, waited.stderr
    checkpoints = json.loads(cli(api, "jobs", "checkpoints", job["id"], "--json").stdout)
    assert checkpoints and checkpoints[0]["step_number"] > 0
    models = json.loads(cli(api, "models", "list", "--json").stdout)
    assert job["fine_tuned_model"] in [model["id"] for model in models]
    table = cli(api, "files", "list")
    assert table.returncode == 0 and file_id in table.stdout

    downloaded = cli(api, "models", "download", job["fine_tuned_model"],
                     str(tmp_path / "adapter"), "--json")
    assert downloaded.returncode == 0, downloaded.stderr
    assert "adapter_config.json" in json.loads(downloaded.stdout)["files"]

    missing = cli(api, "jobs", "get", "ftjob-nope", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["status"] == 404


def test_the_cli_exits_3_for_a_failed_job_and_4_for_a_cancelled_one(api, toy_data, tmp_path):
    # A model folder the server accepts (its tokenizer counts the tokens) whose weights no
    # worker can load: the job really runs and really fails.
    broken = tmp_path / "broken-model"
    shutil.copytree(posttrain_env.models_root() / "posttrain-tiny", broken)
    (broken / "model.safetensors").write_bytes(b"these are not weights")

    failed = cli(api, "jobs", "create", "--model", str(broken), "--training-file",
                 str(toy_data["train"]), "--n-epochs", "1", "--wait")
    assert failed.returncode == 3, (failed.stdout, failed.stderr)
    assert "failed" in failed.stdout

    queued = cli(api, "jobs", "create", "--model", "posttrain-tiny", "--training-file",
                 str(toy_data["train"]), "--pool", "rubin", "--json")
    job_id = json.loads(queued.stdout.splitlines()[-1])["id"]
    cancelled = cli(api, "jobs", "cancel", job_id)
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout
    assert cli(api, "jobs", "follow", job_id).returncode == 4


def test_the_sdk_estimates_exactly_then_reads_usage_invoices_and_grades(client, toy_data):
    uploaded = client.files.upload(toy_data["train"])
    estimate = client.fine_tuning.jobs.estimate(
        model="posttrain-tiny", training_file=uploaded.id, method=SMALL_SFT, eval_samples=10)
    assert estimate.trained_tokens and estimate.seed is not None
    assert {quote.pool for quote in estimate.pools} >= {"cpu", "blackwell", "rubin"}

    job = client.fine_tuning.jobs.create(model="posttrain-tiny", training_file=uploaded.id,
                                         method=SMALL_SFT, eval_samples=10, seed=estimate.seed)
    done = client.fine_tuning.jobs.wait(job.id, poll_interval=0.2)
    assert done.status == "succeeded", done.error
    assert done.trained_tokens == estimate.trained_tokens  # the estimate is the bill's count

    usage = client.organization.usage(group_by=["kind"])
    kinds = {bucket_result.kind for bucket in usage for bucket_result in bucket.results}
    assert {"trained_tokens", "device_seconds"} <= kinds
    invoices = client.organization.invoices.list()
    assert invoices and invoices[0].total > 0

    grader = {"type": "string_check", "name": "exact", "operation": "eq",
              "input": "{{sample.output_text}}", "reference": "{{item.answer}}"}
    assert client.fine_tuning.alpha.graders.validate(grader=grader).grader["type"] == (
        "string_check")
    result = client.fine_tuning.alpha.graders.run(grader=grader, model_sample="46",
                                                  item={"answer": "46"})
    assert result.reward == 1.0
