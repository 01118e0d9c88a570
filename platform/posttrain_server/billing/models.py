"""Append-only usage, the versioned price book, and organizations' budgets and quotas."""

from __future__ import annotations

from django.db import models

from posttrain_server.billing.prices import PriceRates
from posttrain_server.tenancy.models import Organization


class UsageKind(models.TextChoices):
    TRAINED_TOKENS = "trained_tokens"
    ROLLOUT_TOKENS = "rollout_tokens"
    EVAL_TOKENS = "eval_tokens"
    DEVICE_SECONDS = "device_seconds"  # GPU-seconds: GPUs allocated x wall-clock of an attempt


class UsageRecord(models.Model):
    """One row per (job, attempt, kind, segment); the key makes redelivery harmless."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE)
    job = models.ForeignKey("jobs.FineTuningJob", on_delete=models.CASCADE, related_name="usage")
    attempt = models.PositiveIntegerField()
    kind = models.CharField(max_length=32, choices=UsageKind.choices)
    quantity = models.DecimalField(max_digits=24, decimal_places=6)
    idempotency_key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)


class PriceBook(models.Model):
    """One version of the prices. The newest one in effect quotes new jobs; a job keeps the
    version it was quoted with and is billed with it, so editing prices never rewrites a bill.

    Rates are JSON of decimal strings (see ``prices.PriceRates``): ``token_rates[kind][method]
    [size_class]`` in dollars per million tokens, ``gpu_hour_rates[pool]`` per GPU-hour.
    """

    version = models.CharField(max_length=40, unique=True)
    effective_at = models.DateTimeField(db_index=True)
    token_rates = models.JSONField()
    gpu_hour_rates = models.JSONField()
    note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-effective_at"]

    def __str__(self) -> str:
        return self.version

    def rates(self) -> PriceRates:
        return PriceRates.from_json(self.version, self.token_rates, self.gpu_hour_rates)


class OrganizationQuota(models.Model):
    """An organization's monthly budget (USD, quoted cost of jobs created this month) and its
    limit on concurrent (non-terminal) jobs. No row, or a null field: no limit."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE,
                                        related_name="quota")
    monthly_budget = models.DecimalField(max_digits=20, decimal_places=6, null=True,
                                         blank=True)
    max_concurrent_jobs = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"quota of {self.organization_id}"


class TokenCount(models.Model):
    """Tokens of each row of a file under one tokenizer's chat template, computed once.

    ``lengths`` keeps one count per row (not just the sum) so an estimate can leave out the
    rows the trainer will hold out for evaluation and apply the job's truncation.
    """

    file = models.ForeignKey("files.File", on_delete=models.CASCADE, related_name="+")
    tokenizer = models.CharField(max_length=300)  # a stable identity of the tokenizer
    lengths = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["file", "tokenizer"],
                                               name="token_count_unique")]
