"""The job and attempt state machines: the only place that knows which moves are legal.

Public job statuses are OpenAI's names::

    validating_files -> queued -> running -> succeeded | failed | cancelled
                                  running -> queued            (reaper: lease lost, retry)
               queued | running -> pausing -> paused -> queued (pause/resume)
                         running -> paused           (the worker stopped at the job's max_cost)
                          queued -> paused           (paused before a worker claimed it)

Terminal statuses never change. Every move is one conditional UPDATE filtered on the allowed
previous statuses; the row count tells the caller whether it won a race (a cancel racing a
success, two reapers, a duplicate event): exactly one writer sees 1.

Attempts (internal, one per try of a job)::

    dispatched -> running -> succeeded | failed | cancelled | lost | preempted
    dispatched -> cancelled                                  (job cancelled or paused while queued)
    running -> paused                 (stopped with a checkpoint: a resume is a new attempt)
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class JobStatus(models.TextChoices):
    VALIDATING_FILES = "validating_files"
    QUEUED = "queued"
    RUNNING = "running"
    PAUSING = "pausing"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class AttemptStatus(models.TextChoices):
    DISPATCHED = "dispatched"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"
    PREEMPTED = "preempted"  # handed back by a draining worker after a checkpoint
    PAUSED = "paused"


TERMINAL: frozenset[str] = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})
ACTIVE: frozenset[str] = frozenset(set(JobStatus.values) - TERMINAL)

JOB_TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.VALIDATING_FILES: frozenset({JobStatus.QUEUED, JobStatus.FAILED,
                                           JobStatus.CANCELLED}),
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.PAUSING, JobStatus.PAUSED,
                                 JobStatus.FAILED, JobStatus.CANCELLED}),
    JobStatus.RUNNING: frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED,
                                  JobStatus.QUEUED, JobStatus.PAUSING, JobStatus.PAUSED}),
    JobStatus.PAUSING: frozenset({JobStatus.PAUSED, JobStatus.SUCCEEDED, JobStatus.FAILED,
                                  JobStatus.CANCELLED}),
    JobStatus.PAUSED: frozenset({JobStatus.QUEUED, JobStatus.CANCELLED}),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}

ATTEMPT_TRANSITIONS: dict[str, frozenset[str]] = {
    AttemptStatus.DISPATCHED: frozenset({AttemptStatus.RUNNING, AttemptStatus.CANCELLED,
                                         AttemptStatus.LOST}),
    AttemptStatus.RUNNING: frozenset({AttemptStatus.SUCCEEDED, AttemptStatus.FAILED,
                                      AttemptStatus.CANCELLED, AttemptStatus.LOST,
                                      AttemptStatus.PREEMPTED, AttemptStatus.PAUSED}),
    AttemptStatus.SUCCEEDED: frozenset(),
    AttemptStatus.FAILED: frozenset(),
    AttemptStatus.CANCELLED: frozenset(),
    AttemptStatus.LOST: frozenset(),
    AttemptStatus.PREEMPTED: frozenset(),
    AttemptStatus.PAUSED: frozenset(),
}


def can_move(table: dict[str, frozenset[str]], current: str, target: str) -> bool:
    return target in table.get(current, frozenset())


def sources(table: dict[str, frozenset[str]], target: str) -> set[str]:
    """Every status from which ``target`` may be reached."""
    return {status for status, targets in table.items() if target in targets}


def job_transition(job_id: str, target: JobStatus, *, only_from: set[str] | None = None,
                   **fields: Any) -> bool:
    """Move a job to ``target`` if it is in a legal source status; True if this call moved it."""
    from posttrain_server.jobs.models import FineTuningJob

    allowed = sources(JOB_TRANSITIONS, target)
    if only_from is not None:
        allowed &= only_from
    if target in TERMINAL:
        fields.setdefault("finished_at", timezone.now())
    return bool(FineTuningJob.objects.filter(id=job_id, status__in=allowed)
                .update(status=target, **fields))


def attempt_transition(attempt_id: str, target: AttemptStatus, *,
                       only_from: set[str] | None = None, **fields: Any) -> bool:
    from posttrain_server.jobs.models import Attempt

    allowed = sources(ATTEMPT_TRANSITIONS, target)
    if only_from is not None:
        allowed &= only_from
    return bool(Attempt.objects.filter(id=attempt_id, status__in=allowed)
                .update(status=target, **fields))
