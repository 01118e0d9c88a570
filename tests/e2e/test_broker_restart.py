"""The broker crashes and comes back empty while jobs are queued and running.

Redis without persistence loses every message it held: the training messages of queued jobs
are gone. The database is the source of truth, so the reaper sends every attempt nobody
claimed again (``POSTTRAIN_DISPATCH_TIMEOUT_S``), and a running job either finishes or
resumes from a checkpoint. The test runs its own stack on a private redis-server, so killing
the broker never touches the one other tests share.

A broker restart can also kill a Celery process outright (kombu raises AttributeError when the
restart catches it acknowledging a message: "Unrecoverable error", seen in CI on the platform
worker). Deployments restart such a process (Compose ``restart: unless-stopped``, a
Kubernetes Deployment), and so does the embedded stack's supervisor; the second test kills the
platform worker to show that nothing is lost while it is down.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from devstack import Stack

from posttrain_server.billing.models import UsageRecord
from posttrain_server.billing.services import price_book_seed_default
from posttrain_server.jobs.models import Attempt, Checkpoint
from posttrain_server.pools.services import pools_seed_defaults
from posttrain_server.tenancy.services import api_key_create, organization_get_or_create
from tests.e2e.conftest import Api, PrivateRedis, _free_port, database_url
from workers import env as posttrain_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DISPATCH_TIMEOUT_S = 15


def queued_messages(redis: PrivateRedis, queue: str = "train.cpu") -> int:
    out = subprocess.run(["redis-cli", "-p", str(redis.port), "llen", queue],  # noqa: S607
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


@pytest.fixture
def broker_stack(private_redis: PrivateRedis, transactional_db: None,
                 tmp_path: Path) -> Iterator[tuple[Stack, Api]]:
    from django.conf import settings

    pools_seed_defaults()
    price_book_seed_default()
    key = api_key_create(organization=organization_get_or_create(name="broker-org")).secret
    var_dir = tmp_path / "var"
    process_env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "CELERY_BROKER_URL": private_redis.url,
        "POSTTRAIN_VAR_DIR": str(var_dir),
        "POSTTRAIN_MODELS_ROOT": str(posttrain_env.models_root()),
        "POSTTRAIN_HEARTBEAT_INTERVAL_S": "0.5",
        "POSTTRAIN_LEASE_TIMEOUT_S": "10",
        "POSTTRAIN_REAPER_INTERVAL_S": "1",
        "POSTTRAIN_DISPATCH_TIMEOUT_S": str(DISPATCH_TIMEOUT_S),
        "POSTTRAIN_WORKER_HEARTBEAT_S": "1",
    }
    log_dir = Path(os.environ.get("POSTTRAIN_TEST_OUTPUT", "test-output")) / "broker-logs"
    stack = Stack(port=_free_port(), env=process_env, log_dir=log_dir).start(timeout=90)
    try:
        yield stack, Api(stack.url, key)
    finally:
        stack.stop()


def test_a_broker_restart_loses_no_job(broker_stack, private_redis, toy_data):
    stack, api = broker_stack
    big, small = api.upload(toy_data["big"]), api.upload(toy_data["train"])
    body = {"model": "posttrain-tiny", "eval_samples": 0, "method": {
        "type": "supervised", "supervised": {"hyperparameters": {"n_epochs": 1,
                                                                  "batch_size": 16}}}}
    running = api.create_job(**body, training_file=big["id"], seed=1)
    deadline = time.monotonic() + 180
    while not any(e["type"] == "metrics" for e in api.events(running["id"])):
        assert time.monotonic() < deadline, "the first job never started training"
        time.sleep(0.2)
    # One training worker, busy: these two wait in the broker.
    queued = [api.create_job(**body, training_file=small["id"], seed=seed)["id"]
              for seed in (2, 3)]
    deadline = time.monotonic() + 10
    while queued_messages(private_redis) < 2:
        assert time.monotonic() < deadline, "the queued jobs' messages never reached Redis"
        time.sleep(0.1)
    tokens_before = {job_id: Attempt.objects.get(job_id=job_id).token_hash
                     for job_id in queued}

    private_redis.kill()  # the broker crashes with two messages in it and one job running
    time.sleep(3)
    private_redis.start()
    restarted = time.monotonic()
    assert queued_messages(private_redis) == 0  # the messages really are lost

    done = {job_id: api.wait_job(job_id, timeout=300)
            for job_id in [running["id"], *queued]}
    took = time.monotonic() - restarted
    assert {job_id: job["status"] for job_id, job in done.items()} == dict.fromkeys(
        done, "succeeded"), {job_id: job["error"] for job_id, job in done.items()}
    for job_id in queued:  # re-sent from the database under a fresh token, run once
        attempt = Attempt.objects.get(job_id=job_id)
        assert attempt.token_hash != tokens_before[job_id]
        assert attempt.status == "succeeded"
    attempts = list(Attempt.objects.filter(job_id=running["id"]).order_by("number"))
    assert attempts[-1].status == "succeeded"
    if len(attempts) > 1:  # it lost its attempt: resumed from its latest checkpoint, if any
        earlier = Checkpoint.objects.filter(job_id=running["id"],
                                            attempt__lt=attempts[-1].number).order_by("-step")
        assert attempts[-1].resume_from_key == (earlier[0].storage_key if earlier else "")
    rows = UsageRecord.objects.filter(job_id__in=list(done))
    assert max(Counter((r.job_id, r.attempt, r.kind) for r in rows).values()) == 1
    stack.check_alive()  # every process is up, none of them in a crash loop
    print(f"broker restart: {len(done)} jobs succeeded {took:.0f} s after the restart; "
          f"the running job took {len(attempts)} attempt(s); processes restarted: "
          f"{[(r.name, r.returncode) for r in stack.restarts] or 'none'}")


def test_a_platform_worker_that_dies_is_started_again(broker_stack, toy_data):
    stack, api = broker_stack
    train = api.upload(toy_data["train"])
    crashed = stack.named["platform-worker"]
    os.killpg(crashed.pid, signal.SIGKILL)  # as an unrecoverable error would, beat included
    job = api.create_job(model="posttrain-tiny", training_file=train["id"], eval_samples=0,
                         seed=4, method={"type": "supervised", "supervised": {
                             "hyperparameters": {"n_epochs": 1, "batch_size": 16}}})

    # Only the platform worker applies the worker's events: without a restart the job
    # would stay `running` with its `finished` event waiting in the broker.
    done = api.wait_job(job["id"], timeout=240)
    assert done["status"] == "succeeded", done["error"]
    assert [(r.name, r.returncode) for r in stack.restarts] == [
        ("platform-worker", -signal.SIGKILL)]
    assert stack.named["platform-worker"].pid != crashed.pid
    assert UsageRecord.objects.filter(job_id=job["id"], kind="device_seconds").count() == 1
    stack.check_alive()
