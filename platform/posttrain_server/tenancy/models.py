"""Organizations own everything; people and API keys act on behalf of one."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from posttrain_server.api.ids import new_id


def _org_id() -> str:
    return new_id("org")


def _key_id() -> str:
    return new_id("key")


class Organization(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=_org_id, editable=False)
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE,
                                     related_name="memberships")
    role = models.CharField(max_length=20, default="owner")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "organization"],
                                               name="membership_unique")]


class ApiKey(models.Model):
    """A bearer key. Only a SHA-256 hash is stored; the prefix finds the row without a scan.

    Keys are 190+ bits of randomness, so a fast hash is safe (unlike passwords).
    """

    id = models.CharField(primary_key=True, max_length=40, default=_key_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE,
                                     related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=32, unique=True)
    hashed_secret = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.organization_id})"


class IdempotencyRecord(models.Model):
    """The first response to a POST carrying ``Idempotency-Key``, replayed on retries."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    key = models.CharField(max_length=255)
    request_fingerprint = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "key"],
                                               name="idempotency_key_unique")]
