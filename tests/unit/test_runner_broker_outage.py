"""A broker that stays down mid-attempt: the worker stops cleanly and leaves no trainer behind.

Failing the job for our own outage would be wrong, and a trainer left running while the
reaper gives the job to another worker would make two runners for one job.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from kombu.exceptions import OperationalError

from workers import celery_app, contract, runner


def train_job() -> contract.TrainJob:
    return contract.TrainJob(
        job_id="ftjob-outage", attempt=1, attempt_id="ftatt-outage", attempt_token="t",
        pool="cpu", base_model=contract.ModelRef(kind="builtin", ref="posttrain-tiny"),
        training_file="files/train.jsonl", platform_url="http://127.0.0.1:9",
        hyperparameters=contract.TrainHyperparameters(n_epochs=1, batch_size=1,
                                                      learning_rate=1e-3))


@pytest.fixture
def worker_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("POSTTRAIN_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setattr(runner.PlatformClient, "claim", lambda self, worker: True)
    monkeypatch.setattr(runner.PlatformClient, "heartbeat", lambda self: {"lease": True})
    return tmp_path / "work" / "ftjob-outage-1"


def test_an_event_the_broker_will_not_take_is_retried_then_reported_undeliverable(monkeypatch):
    calls = []

    def send_task(*args, **kwargs):
        calls.append(kwargs)
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(celery_app.app, "send_task", send_task)
    event = contract.JobEvent(job_id="ftjob-outage", attempt=1, seq=0, type="message",
                              message="hello", created_at=time.time())
    with pytest.raises(runner.EventsUndeliverable):
        celery_app.publish_event(event)
    assert calls[0]["retry"] is True
    assert calls[0]["retry_policy"] == celery_app.EVENT_RETRY_POLICY


def test_an_attempt_that_cannot_report_ends_without_a_result_and_kills_its_trainer(
        worker_dir, tmp_path, monkeypatch):
    pid_file = tmp_path / "trainer.pid"
    # A stand-in trainer: says one metrics line, then would train for a minute.
    script = (f"import os, sys, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
              "print('{\"type\": \"metrics\", \"step\": 1}', flush=True); time.sleep(60)")
    monkeypatch.setattr(runner, "trainer_command", lambda job, spec: [sys.executable, "-c",
                                                                      script])
    monkeypatch.setattr(runner, "materialize", lambda ref, workdir, storage: SimpleNamespace(
        model_dir=workdir, adapter_dirs=[]))
    monkeypatch.setattr(runner, "default_storage", lambda: SimpleNamespace(
        download=lambda key, path: path))
    published: list[contract.JobEvent] = []

    def publish(event: contract.JobEvent) -> None:
        if event.type == "metrics":  # the broker went away while the trainer was training
            raise runner.EventsUndeliverable("Connection refused")
        published.append(event)

    started = time.monotonic()
    assert runner.run_attempt(train_job(), publish=publish, heartbeat_interval=0.5) is None
    assert time.monotonic() - started < 30  # it did not wait for the trainer's minute
    assert [event.message.split(":")[0] for event in published] == ["Training started"]
    assert not any(event.type == "finished" for event in published)  # the reaper decides
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not worker_dir.exists()
