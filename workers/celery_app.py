"""The training workers' Celery app: no Django, no database, one pool's queue.

Start: ``POSTTRAIN_POOL=cpu python -m celery -A workers.celery_app worker -Q train.cpu
--concurrency 1 --prefetch-multiplier 1``. One job per worker process; the trainer itself runs
in a child process so a crash or OOM never takes the worker down.
"""

from __future__ import annotations

import logging
import logging.config
import time

from celery import Celery
from celery.exceptions import Reject
from celery.signals import setup_logging, worker_init, worker_process_init, worker_shutting_down

from workers import contract, drain, env, logcontext
from workers.celery_config import celery_settings

logger = logging.getLogger("posttrain.worker")

POOL = env.env_str("POSTTRAIN_POOL", "cpu")

app = Celery("posttrain_workers", fixups=[])  # never Celery's Django fix-up
app.conf.update(celery_settings())
app.conf.task_default_queue = contract.train_queue(POOL)

_presence = None


@worker_process_init.connect
def _start_presence(**kwargs: object) -> None:
    """Each process that runs jobs announces itself (pool, host, devices, current job)."""
    global _presence
    from workers.presence import Presence

    _presence = Presence(POOL, send_presence).start()


@setup_logging.connect
def _configure_logging(**kwargs: object) -> None:
    """JSON logs with the job id, like every other process (POSTTRAIN_LOG_FORMAT)."""
    logging.config.dictConfig(logcontext.logging_config())


@worker_init.connect
def _fresh_start(**kwargs: object) -> None:
    drain.clear_drain()  # a drain request belongs to the worker that received it


@worker_shutting_down.connect
def _drain_on_shutdown(**kwargs: object) -> None:
    """SIGTERM: checkpoint the running job and hand it back instead of losing it."""
    drain.request_drain(own=True)


@app.task(name=contract.TRAIN_TASK, acks_late=True)
def train(message: dict) -> None:
    if drain.drain_requested():
        # Back to the queue for another worker; acking it here would lose the job. The pause
        # keeps a draining worker (preStop, before its SIGTERM) from spinning on the message.
        time.sleep(2)
        raise Reject("worker is draining", requeue=True)
    from pydantic import ValidationError

    from workers.runner import run_attempt

    try:
        job = contract.TrainJob.model_validate(message)
    except ValidationError:
        logger.exception("dropping a TrainJob message that does not match contract v1")
        return
    token = logcontext.job_id.set(job.job_id)
    if _presence is not None:
        _presence.set_job(job.job_id)
    try:
        run_attempt(job, publish=publish_event)
    finally:
        logcontext.job_id.reset(token)
        if _presence is not None:
            _presence.set_job(None)


# Waits 0, 0.5, 1, 1.5, then 2 s: an event rides out ~15 s of broker outage (a restart),
# well inside the lease (heartbeats wait while an event does).
EVENT_RETRY_POLICY = {"max_retries": 10, "interval_start": 0, "interval_step": 0.5,
                      "interval_max": 2}


def publish_event(event: contract.JobEvent) -> None:
    """Send a worker event, retrying through a broker restart.

    If the broker stays away longer, the attempt cannot report anything (not even its end):
    ``EventsUndeliverable`` stops it without a result, and the reaper resumes the job from its
    last checkpoint once the lease runs out, rather than failing the job for our outage.
    """
    from kombu.exceptions import OperationalError

    from workers.runner import EventsUndeliverable

    try:
        app.send_task(contract.EVENT_TASK, args=[event.model_dump(mode="json")],
                      queue=contract.PLATFORM_QUEUE, retry=True,
                      retry_policy=EVENT_RETRY_POLICY)
    except OperationalError as exc:
        raise EventsUndeliverable(str(exc)) from exc


def send_presence(beat: contract.WorkerHeartbeat) -> None:
    app.send_task(contract.WORKER_HEARTBEAT_TASK, args=[beat.model_dump(mode="json")],
                  queue=contract.PLATFORM_QUEUE)
