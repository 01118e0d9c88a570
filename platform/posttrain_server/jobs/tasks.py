"""Platform-queue tasks for jobs: worker events and the periodic reaper."""

from celery import shared_task

from posttrain_server.jobs.services import event_apply, reap
from workers import contract, logcontext


@shared_task(name=contract.EVENT_TASK)
def apply_job_event(event: dict) -> None:
    message = contract.JobEvent.model_validate(event)
    token = logcontext.job_id.set(message.job_id)
    try:
        event_apply(event=message)
    finally:
        logcontext.job_id.reset(token)


@shared_task(name=contract.REAP_TASK)
def reap_attempts() -> dict:
    return reap()
