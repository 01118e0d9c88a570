"""A training worker's presence heartbeat: pool, host, devices and the job it is running.

A daemon thread in the worker process that runs jobs sends a ``WorkerHeartbeat`` on the
``platform`` queue every ``POSTTRAIN_WORKER_HEARTBEAT_S`` seconds (and at once when the
current job changes). It is only a presence signal: the lease of a job is its attempt row.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable

from workers import contract, env

logger = logging.getLogger("posttrain.worker")


def device_count() -> tuple[int, str]:
    """(devices, kind) this worker offers: ``POSTTRAIN_WORKER_DEVICES`` or what torch sees."""
    configured = env.env_int("POSTTRAIN_WORKER_DEVICES", 0, minimum=0)
    try:
        import torch

        if torch.cuda.is_available():
            return (configured or torch.cuda.device_count(), torch.cuda.get_device_name(0))
    except Exception:  # noqa: BLE001, S110 - no torch or no driver: a CPU worker
        pass
    return configured or 1, "cpu"


class Presence:
    def __init__(self, pool: str, send: Callable[[contract.WorkerHeartbeat], None]) -> None:
        self.pool, self.send = pool, send
        self.host = socket.gethostname()
        self.name = f"{contract.train_queue(pool)}@{self.host}:{os.getpid()}"
        self.started = time.time()
        self.current_job: str | None = None
        self.devices, self.device_kind = device_count()
        self._wake = threading.Event()
        self.interval = env.env_float("POSTTRAIN_WORKER_HEARTBEAT_S", 10.0, minimum=0.1)

    def message(self) -> contract.WorkerHeartbeat:
        return contract.WorkerHeartbeat(
            worker=self.name, pool=self.pool, host=self.host, devices=self.devices,
            device_kind=self.device_kind, current_job=self.current_job,
            started_at=self.started, sent_at=time.time())

    def set_job(self, job_id: str | None) -> None:
        self.current_job = job_id
        self._wake.set()

    def beat(self) -> None:
        try:
            self.send(self.message())
        except Exception:  # the broker may be restarting; the next beat retries
            logger.warning("worker heartbeat not sent", exc_info=True)

    def run_forever(self) -> None:
        while True:
            self.beat()
            self._wake.wait(self.interval)
            self._wake.clear()

    def start(self) -> Presence:
        threading.Thread(target=self.run_forever, name="posttrain-presence",
                         daemon=True).start()
        return self
