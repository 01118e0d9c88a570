"""Uploaded datasets and generated result files (OpenAI's file object)."""

from __future__ import annotations

from django.db import models

from posttrain_server.api.ids import new_id
from posttrain_server.tenancy.models import Organization


def _file_id() -> str:
    return new_id("file")


class FileStatus(models.TextChoices):
    UPLOADED = "uploaded"  # stored, validation pending
    PROCESSED = "processed"  # valid: usable by jobs
    ERROR = "error"  # invalid: see validation report


class File(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=_file_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="files")
    filename = models.CharField(max_length=255)
    purpose = models.CharField(max_length=40)
    bytes = models.BigIntegerField(default=0)
    status = models.CharField(max_length=20, choices=FileStatus.choices,
                              default=FileStatus.UPLOADED)
    status_details = models.TextField(blank=True, default="")
    validation = models.JSONField(null=True, blank=True)
    storage_key = models.CharField(max_length=300)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"])]

    def __str__(self) -> str:
        return self.id
