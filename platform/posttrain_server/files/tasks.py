"""Platform-queue task for file validation: takes an id, re-fetches, calls the service."""

from celery import shared_task

from posttrain_server.files.services import file_validate
from workers import contract


@shared_task(name=contract.VALIDATE_FILE_TASK)
def validate_file(file_id: str) -> None:
    file_validate(file_id=file_id)
