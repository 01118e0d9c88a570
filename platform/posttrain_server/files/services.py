"""File writes: upload (stream to storage, queue validation), validate, delete."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from posttrain_server.api.errors import ApiError, ConflictError, NotFoundError
from posttrain_server.files.models import File, FileStatus
from posttrain_server.files.selectors import file_get
from posttrain_server.tenancy.models import Organization
from workers import contract, dataset_rules
from workers.storage import StorageError, default_storage

logger = logging.getLogger(__name__)

UPLOAD_PURPOSES = {"fine-tune"}


def file_upload(*, organization: Organization, upload: UploadedFile, purpose: str) -> File:
    if purpose not in UPLOAD_PURPOSES:
        raise ApiError(f"purpose must be one of {sorted(UPLOAD_PURPOSES)}", param="purpose")
    filename = (upload.name or "upload.jsonl")[:255]
    file = File(organization=organization, filename=filename, purpose=purpose)
    file.storage_key = f"files/{organization.id}/{file.id}"
    storage = default_storage()
    try:
        upload.seek(0)
        file.bytes = storage.write_stream(file.storage_key, upload,
                                          max_bytes=settings.UPLOAD_MAX_BYTES)
    except StorageError as exc:
        raise ApiError(str(exc), param="file", status_code=413) from exc
    try:
        with transaction.atomic():
            file.save(force_insert=True)
            transaction.on_commit(lambda: _queue_validation(file.id))
    except BaseException:
        storage.delete(file.storage_key)  # no orphan object without its row
        raise
    return file


def _queue_validation(file_id: str) -> None:
    from posttrain_server.celery_app import app

    app.send_task(contract.VALIDATE_FILE_TASK, args=[file_id], queue=contract.PLATFORM_QUEUE)


def file_validate(*, file_id: str) -> File | None:
    """Check every line; only an ``uploaded`` file moves, so a re-delivered task is a no-op."""
    file = File.objects.filter(id=file_id, status=FileStatus.UPLOADED).first()
    if file is None:
        return None
    limits = dataset_rules.Limits(max_line_bytes=settings.DATASET_MAX_LINE_BYTES,
                                  min_examples=settings.DATASET_MIN_EXAMPLES)
    try:
        with default_storage().open(file.storage_key) as stream:
            report = dataset_rules.validate_jsonl(stream, limits=limits)
    except StorageError:
        report = dataset_rules.Report()
        report.add_error(None, "the uploaded object is missing from storage")
    status = FileStatus.PROCESSED if report.ok else FileStatus.ERROR
    File.objects.filter(id=file.id, status=FileStatus.UPLOADED).update(
        status=status, validation=report.as_dict(),
        status_details="" if report.ok else report.summary(),
    )
    file.refresh_from_db()
    return file


def file_create_result(*, organization: Organization, filename: str, content: bytes) -> File:
    """A file the platform writes itself (a job's metrics CSV): ``fine-tune-results``."""
    file = File(organization=organization, filename=filename, purpose="fine-tune-results",
                status=FileStatus.PROCESSED, bytes=len(content))
    file.storage_key = f"files/{organization.id}/{file.id}"
    default_storage().write_bytes(file.storage_key, content)
    file.save(force_insert=True)
    return file


def file_delete(*, organization: Organization, file_id: str) -> File:
    from posttrain_server.jobs.selectors import jobs_using_file_active

    file = file_get(organization=organization, file_id=file_id)
    if jobs_using_file_active(file=file):
        raise ConflictError(f"File {file_id} is used by a job that has not finished; "
                            "cancel the job or wait for it.", param="file_id",
                            code="file_in_use")
    updated = File.objects.filter(id=file.id, deleted_at__isnull=True).update(
        deleted_at=timezone.now())
    if not updated:
        raise NotFoundError(f"No such File object: {file_id}", param="file_id")
    default_storage().delete(file.storage_key)
    return file
