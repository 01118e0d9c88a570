"""Platform-queue tasks for jobs: worker events and the periodic reaper."""

from celery import shared_task

from posttrain_server.jobs.services import event_apply, reap
from workers import contract


@shared_task(name=contract.EVENT_TASK)
def apply_job_event(event: dict) -> None:
    event_apply(event=contract.JobEvent.model_validate(event))


@shared_task(name=contract.REAP_TASK)
def reap_attempts() -> dict:
    return reap()
