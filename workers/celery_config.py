"""Celery settings both Celery apps (platform and training workers) must agree on.

They share a broker, so serializer, broker transport options and training-queue semantics are
defined once here. Training tasks are ``acks_late`` with prefetch 1: a worker holds at most one
job, and the attempt row in the database, not the broker message, is the lease
(TRAINING_NOTES.md: brokers lose or duplicate long tasks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workers import env

# Redis/SQS redeliver an unacked message after this long; it must exceed the longest job.
# Duplicates are harmless anyway (the claim is a conditional update) but cost a wake-up.
VISIBILITY_TIMEOUT_S = 7 * 24 * 3600


def filesystem_broker_options(var_dir: Path) -> dict[str, Any]:
    """kombu's filesystem transport needs one folder for in and out and an absolute control dir."""
    queue_dir = var_dir / "broker" / "queue"
    control_dir = var_dir / "broker" / "control"
    queue_dir.mkdir(parents=True, exist_ok=True)
    control_dir.mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(queue_dir),
        "data_folder_out": str(queue_dir),
        "control_folder": str(control_dir),
        # The default 1 s poll adds ~0.4 s of latency per hop; 0.1 s measured ~70 ms.
        "polling_interval": env.env_float("POSTTRAIN_BROKER_POLL_S", 0.1, minimum=0.01),
    }


def celery_settings() -> dict[str, Any]:
    url = env.broker_url()
    if url.startswith("filesystem://"):
        from workers import fs_transport

        url = fs_transport.register()  # same folders, atomic writes
        transport_options = filesystem_broker_options(env.var_dir())
    else:
        transport_options = {"visibility_timeout": VISIBILITY_TIMEOUT_S}
    return {
        "broker_url": url,
        "broker_transport_options": transport_options,
        "broker_connection_retry_on_startup": True,
        "result_backend": None,
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # A broker restart must not cancel a running training task: its attempt row is the
        # lease, so the job keeps training and reports through the reconnected broker.
        # (Celery warns that its default will change; say it.)
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "worker_prefetch_multiplier": 1,
        "worker_hijack_root_logger": False,
        "task_default_queue": "platform",
        "enable_utc": True,
    }
