"""Fine-tuning jobs, their attempts (the lease), events and checkpoints."""

from __future__ import annotations

from decimal import Decimal

from django.db import models

from posttrain_server.api.ids import new_id
from posttrain_server.files.models import File
from posttrain_server.jobs.state_machine import AttemptStatus, JobStatus
from posttrain_server.tenancy.models import Organization


def _job_id() -> str:
    return new_id("ftjob")


def _attempt_id() -> str:
    return new_id("ftatt")


def _event_id() -> str:
    return new_id("ftevent")


def _checkpoint_id() -> str:
    return new_id("ftckpt")


class FineTuningJob(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=_job_id, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="jobs")
    model = models.CharField(max_length=300)
    base_model = models.JSONField()  # workers.contract.ModelRef, resolved at create
    size_class = models.CharField(max_length=20)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    training_file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="+")
    validation_file = models.ForeignKey(File, on_delete=models.PROTECT, related_name="+",
                                        null=True, blank=True)
    method = models.JSONField()  # OpenAI's method object, hyperparameters resolved
    training = models.JSONField()  # our extensions, resolved: type, lora, max_seq_length, lr
    suffix = models.CharField(max_length=64, blank=True, default="")
    seed = models.BigIntegerField()
    metadata = models.JSONField(default=dict, blank=True)
    pool = models.CharField(max_length=40)
    fine_tuned_model = models.CharField(max_length=400, null=True, blank=True, unique=True)
    adapter_key = models.CharField(max_length=300, blank=True, default="")
    adapter_kind = models.CharField(max_length=10, blank=True, default="")
    error = models.JSONField(null=True, blank=True)
    trained_tokens = models.BigIntegerField(null=True, blank=True)
    device_seconds = models.DecimalField(max_digits=20, decimal_places=3, default=0)
    rollout_tokens = models.BigIntegerField(default=0)  # reinforcement: prompt + generated
    cost_tokens = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    cost_compute = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    price_version = models.CharField(max_length=40, blank=True, default="")
    # The estimate on the job's pool at create (price book ``price_version``): what monthly
    # budgets count for jobs not finished yet.
    quoted_cost = models.DecimalField(max_digits=20, decimal_places=6, default=0)
    # The job's cost cap (USD): the worker pauses it, checkpointed, at the step that reaches it.
    max_cost = models.DecimalField(max_digits=20, decimal_places=6, null=True, blank=True)
    eval = models.JSONField(null=True, blank=True)
    result_files = models.JSONField(default=list, blank=True)
    progress = models.JSONField(default=dict, blank=True)  # last metrics: step, loss, ...
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    estimated_finish = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organization", "created_at"]),
                   models.Index(fields=["status"])]

    def __str__(self) -> str:
        return self.id

    @property
    def method_type(self) -> str:
        return self.method["type"]

    @property
    def cost_total(self) -> Decimal:
        return self.cost_tokens + self.cost_compute


class Attempt(models.Model):
    """One try at running a job. The row is the lease: only its claimant may report."""

    id = models.CharField(primary_key=True, max_length=40, default=_attempt_id, editable=False)
    job = models.ForeignKey(FineTuningJob, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=AttemptStatus.choices,
                              default=AttemptStatus.DISPATCHED)
    token_hash = models.CharField(max_length=64)
    resume_from_key = models.CharField(max_length=300, blank=True, default="")
    resume_trained_tokens = models.BigIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True, default="")
    reported_tokens = models.BigIntegerField(default=0)  # tokens this attempt trained, so far
    dispatched_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "number"],
                                               name="attempt_number_unique")]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]


class JobEvent(models.Model):
    """A line of a job's history. Worker events are unique on (job, attempt, seq)."""

    id = models.CharField(primary_key=True, max_length=40, default=_event_id, editable=False)
    job = models.ForeignKey(FineTuningJob, on_delete=models.CASCADE, related_name="events")
    attempt = models.PositiveIntegerField(null=True, blank=True)  # null: written by the platform
    seq = models.PositiveIntegerField(null=True, blank=True)
    level = models.CharField(max_length=10, default="info")
    type = models.CharField(max_length=20, default="message")
    message = models.TextField()
    data = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "attempt", "seq"], name="event_seq_unique",
                                    condition=models.Q(attempt__isnull=False)),
        ]


class Checkpoint(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=_checkpoint_id,
                          editable=False)
    job = models.ForeignKey(FineTuningJob, on_delete=models.CASCADE, related_name="checkpoints")
    attempt = models.PositiveIntegerField()
    step = models.PositiveIntegerField()
    storage_key = models.CharField(max_length=300)
    trained_tokens = models.BigIntegerField(default=0)
    metrics = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "step"],
                                               name="checkpoint_step_unique")]
