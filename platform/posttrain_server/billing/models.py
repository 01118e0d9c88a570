"""Append-only usage: what every attempt of every job consumed."""

from __future__ import annotations

from django.db import models

from posttrain_server.tenancy.models import Organization


class UsageKind(models.TextChoices):
    TRAINED_TOKENS = "trained_tokens"
    DEVICE_SECONDS = "device_seconds"
    ROLLOUT_TOKENS = "rollout_tokens"  # reinforcement: prompt + generated tokens sampled


class UsageRecord(models.Model):
    """One row per (job, attempt, kind, segment); the key makes redelivery harmless."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    job = models.ForeignKey("jobs.FineTuningJob", on_delete=models.CASCADE, related_name="usage")
    attempt = models.PositiveIntegerField()
    kind = models.CharField(max_length=32, choices=UsageKind.choices)
    quantity = models.DecimalField(max_digits=24, decimal_places=6)
    idempotency_key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
