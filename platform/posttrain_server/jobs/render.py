"""OpenAI-shaped job, event and checkpoint objects, with Posttrain's extensions."""

from __future__ import annotations

from typing import Any

from posttrain_server.jobs.models import Checkpoint, FineTuningJob, JobEvent
from posttrain_server.jobs.naming import checkpoint_name


def _ts(value: Any) -> int | None:
    return int(value.timestamp()) if value else None


def job_object(job: FineTuningJob) -> dict[str, Any]:
    hyper = job.method[job.method_type]["hyperparameters"]
    training = job.training
    return {
        "id": job.id,
        "object": "fine_tuning.job",
        "created_at": _ts(job.created_at),
        "finished_at": _ts(job.finished_at),
        "estimated_finish": _ts(job.estimated_finish),
        "status": job.status,
        "model": job.model,
        "fine_tuned_model": job.fine_tuned_model,
        "organization_id": job.organization_id,
        "training_file": job.training_file_id,
        "validation_file": job.validation_file_id,
        "result_files": job.result_files,
        "trained_tokens": job.trained_tokens,
        "hyperparameters": {k: hyper[k] for k in ("n_epochs", "batch_size",
                                                  "learning_rate_multiplier")},
        "method": job.method,
        "error": job.error,
        "seed": job.seed,
        "suffix": job.suffix or None,
        "metadata": job.metadata or None,
        "integrations": [],
        "user_provided_suffix": job.suffix or None,
        # Posttrain extensions
        "pool": job.pool,
        "training_type": training["type"],
        "parent_job": training.get("parent_job"),
        "lora": training["lora"],
        "learning_rate": training["learning_rate"],
        "max_seq_length": training["max_seq_length"],
        "cancel_requested": job.cancel_requested_at is not None,
        "progress": job.progress or None,
        "usage": {
            "trained_tokens": job.trained_tokens or 0,
            "device_seconds": str(job.device_seconds),
            "rollout_tokens": job.rollout_tokens,
            "eval_tokens": job.eval_tokens,
            "devices": training.get("gpus", 1),
        },
        "cost": {
            "currency": "usd",
            "tokens": str(job.cost_tokens),
            "compute": str(job.cost_compute),
            "total": str(job.cost_tokens + job.cost_compute),
            "tokens_by_kind": job.cost_tokens_by_kind or None,
            "price_version": job.price_version or None,
        },
        "quoted_cost": str(job.quoted_cost),
        "max_cost": str(job.max_cost) if job.max_cost is not None else None,
        "eval": job.eval,
    }


def event_object(event: JobEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "object": "fine_tuning.job.event",
        "created_at": _ts(event.created_at),
        "level": event.level,
        "message": event.message,
        "type": event.type,
        "data": event.data,
    }


def checkpoint_object(checkpoint: Checkpoint) -> dict[str, Any]:
    job = checkpoint.job
    return {
        "id": checkpoint.id,
        "object": "fine_tuning.job.checkpoint",
        "created_at": _ts(checkpoint.created_at),
        "fine_tuning_job_id": job.id,
        "fine_tuned_model_checkpoint": checkpoint_name(job, checkpoint.step),
        "step_number": checkpoint.step,
        "metrics": checkpoint.metrics,
        "trained_tokens": checkpoint.trained_tokens,
    }
