"""End-to-end fixtures: the real stack (gunicorn, platform worker with beat, training worker)
on the real broker (Redis in CI, kombu's filesystem transport locally) and the test database.

The stack is started once per session against pytest-django's test database, so rows the
tests commit (organizations, keys) are visible to the server and the workers. Nothing in the
training stack, the database or the broker is mocked.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from devstack import Stack

from posttrain_server.billing.services import price_book_seed_default
from posttrain_server.pools.services import pools_seed_defaults
from posttrain_server.tenancy.services import api_key_create, organization_get_or_create
from workers import env as posttrain_env
from workers.toytask import addition_rows, write_jsonl

TERMINAL = {"succeeded", "failed", "cancelled"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(settings_dict: dict[str, Any]) -> str:
    """The test database as a URL for the stack's processes (same DB as this process)."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    return f"postgres://{auth}{settings_dict['HOST']}{port}/{settings_dict['NAME']}"


def _purge_queues(pools: list[str]) -> None:
    """Messages an earlier run left on a shared broker must not reach this run's workers."""
    from posttrain_server.celery_app import app
    from workers import contract

    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in [contract.PLATFORM_QUEUE] + [contract.train_queue(p) for p in pools]:
            try:
                channel.queue_purge(queue)
            except Exception:  # noqa: BLE001 - a queue never declared has nothing to purge
                pass


@pytest.fixture(scope="session")
def stack(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Stack]:
    from django.conf import settings

    var_dir = posttrain_env.var_dir()
    if posttrain_env.broker_url().startswith("filesystem://"):
        shutil.rmtree(var_dir / "broker", ignore_errors=True)  # no stale messages
    else:
        with django_db_blocker.unblock():
            from posttrain_server.pools.selectors import pool_list

            pools = [pool.name for pool in pool_list()] or ["cpu"]
        _purge_queues(pools)
    process_env = {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "POSTTRAIN_VAR_DIR": str(var_dir),
        "POSTTRAIN_HEARTBEAT_INTERVAL_S": "0.5",
        "POSTTRAIN_LEASE_TIMEOUT_S": "20",
        "POSTTRAIN_REAPER_INTERVAL_S": "2",
        "POSTTRAIN_WORKER_HEARTBEAT_S": "1",
    }
    log_dir = Path(os.environ.get("POSTTRAIN_TEST_OUTPUT", "test-output")) / "e2e-logs"
    shutil.rmtree(log_dir, ignore_errors=True)
    running = Stack(port=_free_port(), env=process_env, log_dir=log_dir).start(timeout=90)
    yield running
    running.stop()


class Api:
    """A small HTTP client for tests, speaking to the live server as a user would."""

    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.Client(base_url=f"{base_url}/v1", timeout=30,
                                 headers={"Authorization": f"Bearer {key}"})
        self.key = key
        self.base_url = base_url

    def upload(self, path: Path) -> dict[str, Any]:
        with path.open("rb") as handle:
            response = self.http.post("/files", data={"purpose": "fine-tune"},
                                      files={"file": (path.name, handle)})
        response.raise_for_status()
        return self.wait_file(response.json()["id"])

    def wait_file(self, file_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            file = self.http.get(f"/files/{file_id}").json()
            if file["status"] != "uploaded":
                return file
            time.sleep(0.2)
        raise TimeoutError(f"{file_id} still validating after {timeout}s")

    def create_job(self, **body: Any) -> dict[str, Any]:
        response = self.http.post("/fine_tuning/jobs", json=body)
        assert response.status_code == 200, response.text
        return response.json()

    def job(self, job_id: str) -> dict[str, Any]:
        return self.http.get(f"/fine_tuning/jobs/{job_id}").json()

    def wait_job(self, job_id: str, statuses: set[str] = TERMINAL,
                 timeout: float = 300) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job["status"] in statuses:
                return job
            time.sleep(0.3)
        raise TimeoutError(f"{job_id} not in {statuses} after {timeout}s: {job['status']}")

    def events(self, job_id: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        after = None
        while True:
            params = {"order": "asc", "limit": 100, **({"after": after} if after else {})}
            page = self.http.get(f"/fine_tuning/jobs/{job_id}/events", params=params).json()
            events += page["data"]
            if not page["has_more"]:
                return events
            after = page["last_id"]


@pytest.fixture
def api(stack: Stack, transactional_db) -> Api:
    # Transactional tests flush the database after each test, rows seeded by migrations
    # included: put the default pools and price book back.
    pools_seed_defaults()
    price_book_seed_default()
    organization = organization_get_or_create(name="e2e-org")
    return Api(stack.url, api_key_create(organization=organization).secret)


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("toy")
    paths = {"train": folder / "train.jsonl", "validation": folder / "validation.jsonl",
             "big": folder / "big.jsonl"}
    write_jsonl(paths["train"], addition_rows(240, seed=0, split="train"))
    write_jsonl(paths["validation"], addition_rows(40, seed=0, split="validation"))
    write_jsonl(paths["big"], addition_rows(3000, seed=0, split="train"))
    return paths


class PrivateRedis:
    """A redis-server of this test's own, so a test may kill and restart its broker without
    touching the one other tests (or other people on this machine) share."""

    def __init__(self, folder: Path) -> None:
        self.port = _free_port()
        self.folder = folder
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        # No persistence: a restart loses every message, the worst case for the platform.
        self.process = subprocess.Popen(  # noqa: S603 - fixed arguments
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port),
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            stdout=(self.folder / "redis.log").open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"redis-server did not listen on {self.port}")

    def kill(self) -> None:
        """SIGKILL, as a crashed broker: everything it held in memory is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    redis = PrivateRedis(tmp_path)
    redis.start()
    yield redis
    redis.kill()
