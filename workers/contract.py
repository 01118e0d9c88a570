"""The message contract between the platform and the training workers (version 1).

Both sides import this module and nothing else of each other. Workers hold no database
credentials: they receive a ``TrainJob``, claim and heartbeat their attempt over the platform's
internal HTTP endpoints (authenticated by the per-attempt token in the message) and report
everything else as ``JobEvent`` messages on the ``platform`` queue.

Compatibility rules: unknown fields are ignored (``extra="ignore"``), so adding an optional
field is not a breaking change. A breaking change is a new model version *and* a new task name
(``posttrain.train.v2``), so old workers never receive messages they cannot parse.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TRAIN_TASK = "posttrain.train.v1"
EVENT_TASK = "posttrain.job_event.v1"
VALIDATE_FILE_TASK = "posttrain.validate_file.v1"
REAP_TASK = "posttrain.reap.v1"
WORKER_HEARTBEAT_TASK = "posttrain.worker_heartbeat.v1"
PLATFORM_QUEUE = "platform"

EventType = Literal["message", "metrics", "checkpoint", "finished"]
# How an attempt ended: a job outcome, or paused (user pause, budget cap: the job waits for a
# resume), or preempted (its worker drained: the job goes back to the queue). Both of the last
# two resume later from the checkpoint written on the way out.
AttemptOutcome = Literal["succeeded", "failed", "cancelled", "paused", "preempted"]


def train_queue(pool: str) -> str:
    """Each pool has its own queue so a worker only ever receives work for its hardware."""
    return f"train.{pool}"


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ModelRef(_Message):
    """Where the trainer finds the starting weights.

    ``builtin``: a model the worker builds locally by name (no hub needed);
    ``path``: a folder on the worker's filesystem; ``hf``: a Hugging Face id, loaded from the
    local cache only; ``storage``: an archive in object storage (a previous job's result).
    """

    kind: Literal["builtin", "path", "hf", "storage"]
    ref: str
    # For ``storage`` refs that hold only a LoRA adapter: the base model it applies to.
    base: ModelRef | None = None


class LoraSpec(_Message):
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: list[str] | str = "all-linear"


class TrainHyperparameters(_Message):
    n_epochs: int
    batch_size: int
    learning_rate: float
    warmup_ratio: float = 0.0
    lr_scheduler: str = "linear"
    max_seq_length: int = 512
    logging_steps: int = 0  # 0: about 100 metrics events per job
    checkpoint_every_steps: int = 0  # 0: about 10 checkpoints per job


class DpoSpec(_Message):
    """DPO settings beyond the shared hyperparameters (``method: dpo``)."""

    beta: float = 0.1
    # Weight of an SFT (negative log-likelihood) term on the preferred answer; 0 is plain DPO.
    # TRAINING_NOTES: plain DPO lowered the preferred answer's probability on the toy task.
    sft_weight: float = 0.0


class ReinforcementSpec(_Message):
    """GRPO settings (``method: reinforcement``); the grader is OpenAI's grader object."""

    grader: dict[str, Any]
    generations_per_prompt: int = 8
    max_completion_length: int = 16
    temperature: float = 1.0
    kl_beta: float = 0.0
    sandbox_workers: int = 2


Method = Literal["supervised", "dpo", "reinforcement"]


class BudgetSpec(_Message):
    """A job's cost cap, with the rates needed to follow its spend step by step.

    Only a trigger: the trainer stops (checkpointed) at the first step where this estimate of
    the spend reaches ``max_cost``; the platform bills from usage with ``Decimal``.
    """

    max_cost: str  # USD, decimal string
    spent_before: str = "0"  # billed to earlier attempts of the job
    token_rate_per_million: str  # trained tokens
    gpu_hour_rate: str
    gpus: int = 1
    # Eval tokens (a platform that does not send it: not followed). A rate, not a secret.
    eval_token_rate_per_million: str = "0"  # noqa: S105

    def spent(self, *, tokens: int, seconds: float, eval_tokens: int = 0) -> float:
        return (float(self.spent_before)
                + tokens * float(self.token_rate_per_million) / 1_000_000
                + eval_tokens * float(self.eval_token_rate_per_million) / 1_000_000
                + seconds * self.gpus * float(self.gpu_hour_rate) / 3600)

    def reached(self, *, tokens: int, seconds: float, eval_tokens: int = 0) -> bool:
        return self.spent(tokens=tokens, seconds=seconds,
                          eval_tokens=eval_tokens) >= float(self.max_cost)


class TrainJob(_Message):
    """One attempt of one job: everything a worker needs, nothing it must look up."""

    version: Literal[1] = 1
    job_id: str
    attempt: int
    attempt_id: str
    attempt_token: str
    pool: str
    gpus: int = 1
    method: Method = "supervised"
    dpo: DpoSpec | None = None  # set when method is "dpo"
    reinforcement: ReinforcementSpec | None = None  # set when method is "reinforcement"
    base_model: ModelRef
    training_file: str  # storage key
    validation_file: str | None = None  # storage key; None: hold out a slice of training data
    hyperparameters: TrainHyperparameters
    lora: LoraSpec | None = None  # None means full fine-tuning
    seed: int = 0
    assistant_only_loss: bool = True
    eval_samples: int = 200
    resume_from_checkpoint: str | None = None  # storage key of a checkpoint archive
    resume_trained_tokens: int = 0
    platform_url: str
    budget: BudgetSpec | None = None  # None: no cap

    @property
    def method_module(self) -> str:
        """The trainer module under ``workers.trainer`` that runs this method."""
        return {"supervised": "sft", "dpo": "dpo", "reinforcement": "grpo"}[self.method]


class JobEvent(_Message):
    """Everything a worker reports. ``(job_id, attempt, seq)`` makes re-delivery harmless."""

    version: Literal[1] = 1
    job_id: str
    attempt: int
    seq: int = Field(ge=0)
    type: EventType
    level: Literal["info", "warn", "error"] = "info"
    message: str
    data: dict[str, Any] = Field(default_factory=dict)
    created_at: float


class FinishedData(_Message):
    """The ``data`` of the last event of an attempt: the terminal status and what it used.

    The platform applies it, the usage and the bill in one transaction.
    """

    status: AttemptOutcome
    error: dict[str, Any] | None = None
    stop_reason: Literal["cancelled", "paused", "budget", "lease_lost", "preempted"] | None = None
    trained_tokens: int = 0
    # Reinforcement: prompt + generated tokens of every rollout, counted from the token ids.
    rollout_tokens: int = 0
    # Eval tokens of this attempt by segment ("before", "step-<N>", "after"), counted by
    # ``workers.trainer.eval_plan``'s rule; one usage row each. Seconds spent in evals (part
    # of device_seconds), so calibration can tell eval time from training time.
    eval_tokens: dict[str, int] = Field(default_factory=dict)
    eval_seconds: float = 0.0
    train_seconds: float = 0.0  # inside the training loop, checkpoint evals excluded
    grader_errors: int = 0
    device_seconds: float = 0.0
    eval_metric: str | None = None
    eval_before: float | None = None
    eval_after: float | None = None
    # Secondary metrics, by name: {"exact_match": {"before": 0.4, "after": 0.5}}.
    eval_more: dict[str, dict[str, float]] = Field(default_factory=dict)
    adapter_key: str | None = None
    adapter_kind: Literal["lora", "full"] | None = None
    last_checkpoint_key: str | None = None
    steps: int = 0


class CheckpointData(_Message):
    step: int
    key: str
    trained_tokens: int
    # Train metrics, plus the checkpoint's eval on the first held-out rows ("eval_<metric>",
    # "eval_samples") when the job has an eval set.
    metrics: dict[str, float] = Field(default_factory=dict)
    eval_tokens: int = 0  # that eval's tokens (usage segment "step-<step>")


class WorkerHeartbeat(_Message):
    """A training worker's presence, sent periodically on the ``platform`` queue.

    The platform counts a pool's workers online from these (``GET /v1/pools``) and picks
    ``auto`` pools among pools with a worker online.
    """

    version: Literal[1] = 1
    worker: str  # unique per worker process: queue@host:pid
    pool: str
    host: str
    devices: int = Field(ge=0, default=1)
    device_kind: str = ""
    current_job: str | None = None
    started_at: float
    sent_at: float
