"""Pause and resume: a running job stops at its next step with a checkpoint; resume continues
from that checkpoint as a new attempt.

Pause is cooperative like cancel: a queued job pauses at once (its unclaimed attempt is
withdrawn); a running one moves to ``pausing``, the worker learns it from its next heartbeat,
the trainer checkpoints and stops, and the attempt's result moves the job to ``paused``
(``services._attempt_paused``). A job that reached its ``max_cost`` arrives in ``paused`` the
same way, with the reason in ``error`` and its events.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from posttrain_server.api.errors import ConflictError
from posttrain_server.billing.services import job_usage_cost
from posttrain_server.jobs import dispatch
from posttrain_server.jobs.models import Attempt, FineTuningJob
from posttrain_server.jobs.selectors import job_get
from posttrain_server.jobs.services import event_platform
from posttrain_server.jobs.state_machine import AttemptStatus, JobStatus, job_transition
from posttrain_server.tenancy.models import Organization


def job_pause(*, organization: Organization, job_id: str) -> FineTuningJob:
    job = job_get(organization=organization, job_id=job_id)
    if job.status in (JobStatus.PAUSING, JobStatus.PAUSED):
        return job  # asking twice is harmless
    if job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
        raise ConflictError(f"Job {job_id} is {job.status} and cannot be paused",
                            param="fine_tuning_job_id", code="job_not_pausable")
    with transaction.atomic():
        # The attempt row first, like a claim does, so a pause racing a claim cannot deadlock.
        withdrawn = Attempt.objects.filter(job=job, status=AttemptStatus.DISPATCHED).update(
            status=AttemptStatus.CANCELLED, finished_at=timezone.now())
        if withdrawn and job_transition(job.id, JobStatus.PAUSED, only_from={JobStatus.QUEUED}):
            event_platform(job, "The job is paused before it started; resume to queue it")
        elif not withdrawn and job_transition(job.id, JobStatus.PAUSING,
                                              only_from={JobStatus.RUNNING}):
            event_platform(job, "Pause requested; the trainer checkpoints and stops at its "
                           "next step")
        else:
            transaction.set_rollback(True)
            raise ConflictError(f"Job {job_id} changed status meanwhile; retry",
                                param="fine_tuning_job_id", code="job_status_changed",
                                retryable=True)
    job.refresh_from_db()
    return job


def job_resume(*, organization: Organization, job_id: str,
               data: dict[str, Any]) -> FineTuningJob:
    """Continue a paused job from its latest checkpoint as a new attempt.

    ``max_cost`` in the body replaces the cap (null removes it); a job still at or over its
    cap is refused, so raising the cap is an explicit decision.
    """
    job = job_get(organization=organization, job_id=job_id)
    if job.status != JobStatus.PAUSED:
        raise ConflictError(f"Job {job_id} is {job.status}, not paused",
                            param="fine_tuning_job_id", code="job_not_paused")
    with transaction.atomic():
        if not job_transition(job.id, JobStatus.QUEUED, only_from={JobStatus.PAUSED},
                              error=None):
            raise ConflictError(f"Job {job_id} was resumed or cancelled meanwhile",
                                param="fine_tuning_job_id", code="job_not_paused")
        if "max_cost" in data:
            FineTuningJob.objects.filter(id=job.id).update(max_cost=data["max_cost"])
        job.refresh_from_db()
        spent = job_usage_cost(job=job).total
        if job.max_cost is not None and spent >= job.max_cost:
            raise ConflictError(f"Job {job_id} has spent ${spent}, at or over its max_cost "
                                f"${job.max_cost}: resume with a higher max_cost",
                                param="max_cost", code="max_cost_reached")
        attempt, checkpoint = dispatch.resuming_attempt(job, timezone.now())
        where = f"from step {checkpoint.step}" if checkpoint else "from the start"
        cap = f"; max_cost ${job.max_cost}" if job.max_cost is not None else ""
        event_platform(job, f"Resumed as attempt {attempt.number} {where} (${spent} spent so "
                       f"far{cap})")
    job.refresh_from_db()
    return job



