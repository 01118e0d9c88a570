"""Draining a training worker: checkpoint the running job and hand it back to the queue.

A node drain, a scale-in or ``docker stop`` must not throw away hours of training. Draining
is a file in the worker's work folder: the runner sees it within a fraction of a second,
asks the trainer to stop at its next step (it checkpoints on the way out) and reports the
attempt ``preempted``, which the platform turns into a new queued attempt that resumes from
that checkpoint on another worker. The worker takes no new job while the file exists.

Triggers: SIGTERM to the worker (Celery's shutdown signal, see ``workers.celery_app``) and
Kubernetes' preStop hook: ``python -m workers.drain --wait 840``, which returns once the
running attempt has finished handing back (or the wait is over).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from workers import env

DRAIN_FILE = "DRAIN"


def work_root() -> Path:
    return Path(env.env_str("POSTTRAIN_WORK_DIR", str(env.var_dir() / "work")))


def _own_file(pid: int) -> Path:
    return work_root() / f"{DRAIN_FILE}.{pid}"


def drain_requested() -> bool:
    """For the whole work folder (preStop: one worker per pod), or for this worker alone.

    A Celery worker runs its task in a pool child, so the worker's own request is the one
    named after this process or its parent: several workers sharing a folder on one host
    never drain each other.
    """
    root = work_root()
    return ((root / DRAIN_FILE).exists() or _own_file(os.getpid()).exists()
            or _own_file(os.getppid()).exists())


def request_drain(*, own: bool = False) -> None:
    """``own``: only the calling worker process (its SIGTERM); else every worker of the folder."""
    root = work_root()
    root.mkdir(parents=True, exist_ok=True)
    (_own_file(os.getpid()) if own else root / DRAIN_FILE).touch()


def clear_drain() -> None:
    (work_root() / DRAIN_FILE).unlink(missing_ok=True)
    _own_file(os.getpid()).unlink(missing_ok=True)


def attempts_running() -> int:
    root = work_root()
    return sum(1 for spec in root.glob("*/spec.json")) if root.is_dir() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=0.0,
                        help="seconds to wait for the running attempt to hand back")
    args = parser.parse_args(argv)
    request_drain()
    deadline = time.monotonic() + args.wait
    while attempts_running() and time.monotonic() < deadline:
        time.sleep(1.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
