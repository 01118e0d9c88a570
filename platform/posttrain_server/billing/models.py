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
    # Copied from the job when the row is written, so usage reports and invoices group
    # without joins, and a row keeps saying how it was priced.
    pool = models.CharField(max_length=40, blank=True, default="")
    method = models.CharField(max_length=40, blank=True, default="")
    size_class = models.CharField(max_length=20, blank=True, default="")
    price_version = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"])]


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


def _invoice_id() -> str:
    from posttrain_server.api.ids import new_id

    return new_id("inv")


class Invoice(models.Model):
    """One per organization per month. The current month's is a ``draft`` whose lines are
    recomputed from usage when asked for; a past month's is ``final`` and never changes."""

    id = models.CharField(primary_key=True, max_length=40, default=_invoice_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE,
                                     related_name="invoices")
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    status = models.CharField(max_length=10, default="draft")
    total = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "period_start"],
                                               name="invoice_month_unique")]
        ordering = ["-period_start"]


class InvoiceLine(models.Model):
    """Tokens or GPU-hours of one (pool, method, size class, price version): quantity x rate,
    rounded once (``prices.money``)."""

    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    kind = models.CharField(max_length=32)  # a UsageKind; device_seconds shown as GPU-hours
    pool = models.CharField(max_length=40)
    method = models.CharField(max_length=40)
    size_class = models.CharField(max_length=20)
    price_version = models.CharField(max_length=40)
    quantity = models.DecimalField(max_digits=24, decimal_places=6)
    unit = models.CharField(max_length=20)  # "1M tokens" or "GPU-hour"
    unit_price = models.DecimalField(max_digits=20, decimal_places=6)
    amount = models.DecimalField(max_digits=20, decimal_places=6)
