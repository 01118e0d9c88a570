"""Job reads, scoped to one organization."""

from __future__ import annotations

from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform

from posttrain_server.api.errors import NotFoundError
from posttrain_server.files.models import File
from posttrain_server.jobs.models import Checkpoint, FineTuningJob, JobEvent
from posttrain_server.jobs.state_machine import ACTIVE
from posttrain_server.tenancy.models import Organization


def job_list(*, organization: Organization, metadata: dict[str, str] | None = None
             ) -> QuerySet[FineTuningJob]:
    jobs = FineTuningJob.objects.filter(organization=organization).select_related("organization")
    for index, (key, value) in enumerate((metadata or {}).items()):
        # An alias, never ``metadata__<key>``: a key holding "__" must not become a lookup.
        alias = f"_metadata_{index}"
        jobs = jobs.alias(**{alias: KeyTransform(key, "metadata")}).filter(**{alias: value})
    return jobs


def job_get(*, organization: Organization, job_id: str) -> FineTuningJob:
    job = job_list(organization=organization).filter(id=job_id).first()
    if job is None:
        raise NotFoundError(f"No such fine-tuning job: {job_id}", param="fine_tuning_job_id")
    return job


def job_events(*, job: FineTuningJob) -> QuerySet[JobEvent]:
    return JobEvent.objects.filter(job=job)


def job_checkpoints(*, job: FineTuningJob) -> QuerySet[Checkpoint]:
    return Checkpoint.objects.filter(job=job)


def checkpoint_get(*, job: FineTuningJob, checkpoint_id: str) -> Checkpoint:
    checkpoint = job_checkpoints(job=job).filter(id=checkpoint_id).first()
    if checkpoint is None:
        raise NotFoundError(f"No such checkpoint: {checkpoint_id}", param="checkpoint_id")
    return checkpoint


def jobs_using_file_active(*, file: File) -> bool:
    return (FineTuningJob.objects.filter(training_file=file, status__in=ACTIVE).exists()
            or FineTuningJob.objects.filter(validation_file=file, status__in=ACTIVE).exists())


def fine_tuned_models(*, organization: Organization) -> QuerySet[FineTuningJob]:
    return FineTuningJob.objects.filter(organization=organization,
                                        fine_tuned_model__isnull=False)
