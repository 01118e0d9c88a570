"""File reads, always scoped to one organization: another org's id is simply not found."""

from __future__ import annotations

from django.db.models import QuerySet

from posttrain_server.api.errors import NotFoundError
from posttrain_server.files.models import File
from posttrain_server.tenancy.models import Organization


def file_list(*, organization: Organization, purpose: str | None = None) -> QuerySet[File]:
    files = File.objects.filter(organization=organization, deleted_at__isnull=True)
    return files.filter(purpose=purpose) if purpose else files


def file_get(*, organization: Organization, file_id: str, param: str = "file_id") -> File:
    file = file_list(organization=organization).filter(id=file_id).first()
    if file is None:
        raise NotFoundError(f"No such File object: {file_id}", param=param)
    return file
