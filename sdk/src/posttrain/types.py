"""Typed objects of the API, as pydantic models.

Unknown fields are kept (``extra="allow"``), so a newer server never breaks an older SDK; money
arrives as decimal strings and is parsed to ``Decimal``, never to a float, so sums of costs stay
exact.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = [
    "CursorPage",
    "GraderRun",
    "GraderValidation",
    "Invoice",
    "InvoiceLine",
    "JobEstimate",
    "PoolQuote",
    "UsageBucket",
    "UsageResult",
    "FileDeleted",
    "FileObject",
    "FileValidation",
    "FineTuningJob",
    "FineTuningJobCheckpoint",
    "FineTuningJobEvent",
    "JobCost",
    "JobError",
    "JobEval",
    "JobProgress",
    "JobUsage",
    "Model",
    "TERMINAL_JOB_STATUSES",
    "ValidationIssue",
]

JobStatus = Literal["validating_files", "queued", "running", "pausing", "paused", "succeeded",
                    "failed", "cancelled"]
TERMINAL_JOB_STATUSES = frozenset({"succeeded", "failed", "cancelled"})


class PosttrainModel(BaseModel):
    model_config = ConfigDict(extra="allow", protected_namespaces=())


class ValidationIssue(PosttrainModel):
    line: int | None = None
    message: str


class FileValidation(PosttrainModel):
    """The server's line-numbered report on a dataset (also what ``files check`` prints)."""

    format: str | None = None
    line_count: int = 0
    example_count: int = 0
    error_count: int = 0
    errors: list[ValidationIssue] = []


class FileObject(PosttrainModel):
    id: str
    object: str = "file"
    bytes: int
    created_at: int
    expires_at: int | None = None
    filename: str
    purpose: str
    status: str
    status_details: str | None = None
    validation: FileValidation | None = None


class FileDeleted(PosttrainModel):
    id: str
    object: str = "file"
    deleted: bool


class JobUsage(PosttrainModel):
    trained_tokens: int = 0
    rollout_tokens: int = 0
    eval_tokens: int = 0
    device_seconds: Decimal = Decimal(0)
    devices: int = 1


class JobCost(PosttrainModel):
    """USD, exact: ``tokens + compute == total``."""

    currency: str = "usd"
    tokens: Decimal = Decimal(0)
    compute: Decimal = Decimal(0)
    total: Decimal = Decimal(0)
    price_version: str | None = None
    # The tokens line by usage kind (trained, rollout, eval), each part rounded on its own.
    tokens_by_kind: dict[str, Decimal] | None = None


class JobEval(PosttrainModel):
    metric: str | None = None
    before: float | None = None
    after: float | None = None
    gain: float | None = None
    gain_per_dollar: float | None = None


class JobProgress(PosttrainModel):
    """The trainer's last metrics report (all optional: a queued job has none)."""

    step: int | None = None
    total_steps: int | None = None
    epoch: float | None = None
    learning_rate: float | None = None
    trained_tokens: int | None = None
    elapsed_s: float | None = None
    train_loss: float | None = None
    train_mean_token_accuracy: float | None = None


class JobError(PosttrainModel):
    message: str | None = None
    code: str | None = None
    param: str | None = None


class PoolQuote(PosttrainModel):
    """One pool's quote: GPUs, wall time, GPU-hours and dollars for a job's tokens."""

    pool: str
    accelerator: str | None = None
    gpus: int | None = None
    trained_tokens: int | None = None
    eval_tokens: int | None = None
    eval_tokens_read: int | None = None
    rollout_tokens: int | None = None
    rollout_tokens_read: int | None = None
    wall_seconds: Decimal | None = None
    gpu_hours: Decimal | None = None
    workers_online: int | None = None
    within_budget: bool | None = None
    cost: JobCost | None = None


class JobEstimate(PosttrainModel):
    """``jobs.estimate``: exact trained tokens, eval tokens (``eval_tokens_read`` exact, the
    answers bounded: ``eval_tokens`` is an upper bound), and a quote on every enabled pool.

    Reinforcement: ``trained_tokens`` bounds the generated tokens; rollout tokens lie between
    ``rollout_tokens_read`` (the prompts, exact) and ``rollout_tokens``."""

    object: str = "fine_tuning.job.estimate"
    model: str
    method: str | None = None
    size_class: str | None = None
    seed: int | None = None
    n_epochs: int | None = None
    trained_tokens: int | None = None
    eval_tokens: int | None = None
    eval_tokens_read: int | None = None
    eval_segments: list[str] = []
    rollout_tokens: int | None = None
    rollout_tokens_read: int | None = None
    price_version: str | None = None
    pool: str | None = None
    monthly_budget: Decimal | None = None
    month_spend: Decimal | None = None
    pools: list[PoolQuote] = []


class FineTuningJob(PosttrainModel):
    id: str
    object: str = "fine_tuning.job"
    created_at: int
    finished_at: int | None = None
    estimated_finish: int | None = None
    status: JobStatus | str
    model: str
    fine_tuned_model: str | None = None
    organization_id: str | None = None
    training_file: str
    validation_file: str | None = None
    result_files: list[str] = []
    trained_tokens: int | None = None
    hyperparameters: dict[str, Any] | None = None
    method: dict[str, Any] | None = None
    error: JobError | None = None
    seed: int | None = None
    suffix: str | None = None
    metadata: dict[str, str] | None = None
    # Posttrain extensions
    pool: str | None = None
    training_type: str | None = None
    lora: dict[str, Any] | None = None
    learning_rate: float | None = None
    max_seq_length: int | None = None
    cancel_requested: bool = False
    progress: JobProgress | None = None
    usage: JobUsage | None = None
    cost: JobCost | None = None
    eval: JobEval | None = None
    quoted_cost: Decimal | None = None
    max_cost: Decimal | None = None
    alternatives: list[PoolQuote] | None = None

    @property
    def done(self) -> bool:
        """True once the status is terminal (it never changes after that)."""
        return self.status in TERMINAL_JOB_STATUSES


class FineTuningJobEvent(PosttrainModel):
    id: str
    object: str = "fine_tuning.job.event"
    created_at: int
    level: str
    message: str
    type: str = "message"
    data: dict[str, Any] | None = None


class FineTuningJobCheckpoint(PosttrainModel):
    id: str
    object: str = "fine_tuning.job.checkpoint"
    created_at: int
    fine_tuning_job_id: str
    fine_tuned_model_checkpoint: str
    step_number: int
    metrics: dict[str, Any] | None = None
    trained_tokens: int | None = None


class Model(PosttrainModel):
    id: str
    object: str = "model"
    created: int
    owned_by: str


class UsageResult(PosttrainModel):
    """Usage of one kind (and group: ``job_id``, ``pool``, ``method``) within a bucket."""

    object: str = "organization.usage.fine_tuning"
    kind: str
    quantity: Decimal
    job_id: str | None = None
    pool: str | None = None
    method: str | None = None


class UsageBucket(PosttrainModel):
    object: str = "bucket"
    start_time: int
    end_time: int
    results: list[UsageResult] = []


class InvoiceLine(PosttrainModel):
    kind: str
    pool: str | None = None
    method: str | None = None
    size_class: str | None = None
    price_version: str | None = None
    quantity: Decimal
    unit: str | None = None
    unit_price: Decimal
    amount: Decimal


class Invoice(PosttrainModel):
    """One month's invoice (the current month's is a draft); ``total`` is the sum of lines."""

    id: str
    object: str = "invoice"
    period_start: int
    period_end: int
    status: str
    currency: str = "usd"
    total: Decimal
    lines: list[InvoiceLine] = []


class GraderRun(PosttrainModel):
    reward: float
    metadata: dict[str, Any] | None = None
    sub_rewards: dict[str, Any] | None = None
    model_grader_token_usage_per_model: dict[str, Any] | None = None
    error: str | None = None


class GraderValidation(PosttrainModel):
    grader: dict[str, Any]


T = TypeVar("T")


class CursorPage(PosttrainModel, Generic[T]):
    """One page of a list: ``after=<last_id>`` fetches the next while ``has_more``."""

    object: str = "list"
    data: list[T]
    has_more: bool = False
    first_id: str | None = None
    last_id: str | None = None
