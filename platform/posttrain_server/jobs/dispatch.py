"""Sending an attempt to its pool's queue: the platform side of the ``TrainJob`` contract."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from posttrain_server.billing.services import budget_spec
from posttrain_server.jobs.models import Attempt, Checkpoint, FineTuningJob
from workers import contract


def new_attempt_token() -> tuple[str, str]:
    """(token for the message, hash for the row): only the hash is stored."""
    token = secrets.token_urlsafe(32)
    return token, hashlib.sha256(token.encode()).hexdigest()


def train_message(job: FineTuningJob, attempt: Attempt, token: str) -> contract.TrainJob:
    training = job.training
    method = job.method_type
    hyper = job.method[method]["hyperparameters"]
    dpo = reinforcement = None
    if method == "dpo":
        dpo = contract.DpoSpec(beta=hyper["beta"], sft_weight=hyper.get("sft_weight", 0.0))
    elif method == "reinforcement":
        reinforcement = contract.ReinforcementSpec(
            grader=job.method[method]["grader"],
            generations_per_prompt=hyper["generations_per_prompt"],
            max_completion_length=hyper["max_completion_length"],
            temperature=hyper["temperature"], kl_beta=hyper["kl_beta"])
    return contract.TrainJob(
        job_id=job.id,
        attempt=attempt.number,
        attempt_id=attempt.id,
        attempt_token=token,
        pool=job.pool,
        gpus=training.get("gpus", 1),
        method=method,
        dpo=dpo,
        reinforcement=reinforcement,
        base_model=contract.ModelRef.model_validate(job.base_model),
        training_file=job.training_file.storage_key,
        validation_file=job.validation_file.storage_key if job.validation_file else None,
        hyperparameters=contract.TrainHyperparameters(
            n_epochs=hyper["n_epochs"], batch_size=hyper["batch_size"],
            learning_rate=training["learning_rate"],
            max_seq_length=training["max_seq_length"],
            warmup_ratio=training.get("warmup_ratio", 0.0),
            lr_scheduler=training.get("lr_scheduler", "linear"),
            logging_steps=training.get("logging_steps", 0),
            checkpoint_every_steps=training.get("checkpoint_every_steps", 0),
        ),
        lora=contract.LoraSpec(**training["lora"]) if training["type"] == "lora" else None,
        seed=job.seed,
        assistant_only_loss=training.get("assistant_only_loss", True),
        eval_samples=(training["eval_samples"] if hyper.get("eval_samples") is None
                      else hyper["eval_samples"]),
        resume_from_checkpoint=attempt.resume_from_key or None,
        resume_trained_tokens=attempt.resume_trained_tokens,
        platform_url=settings.PLATFORM_URL,
        budget=budget_spec(job=job),
    )


def send_train_message(message: contract.TrainJob) -> None:
    from posttrain_server.celery_app import app

    app.send_task(contract.TRAIN_TASK, args=[message.model_dump(mode="json")],
                  queue=contract.train_queue(message.pool))


def dispatch_on_commit(job: FineTuningJob, attempt: Attempt, token: str) -> None:
    """Queue the attempt once the transaction that wrote it commits (never on rollback)."""
    message = train_message(job, attempt, token)
    transaction.on_commit(lambda: send_train_message(message))


def resuming_attempt(job: FineTuningJob, now: Any) -> tuple[Attempt, Checkpoint | None]:
    """A new attempt that resumes from the job's latest checkpoint, queued on commit.

    The one way a job continues after an attempt ended early: a lost worker (reaper), a
    drained worker (preemption) or a resume after a pause. The caller holds the transaction
    and moves the job's status.
    """
    checkpoint = job.checkpoints.order_by("-step").first()
    token, token_hash = new_attempt_token()
    number = (job.attempts.aggregate(top=Max("number"))["top"] or 0) + 1
    attempt = Attempt.objects.create(
        job=job, number=number, token_hash=token_hash, dispatched_at=now,
        resume_from_key=checkpoint.storage_key if checkpoint else "",
        resume_trained_tokens=checkpoint.trained_tokens if checkpoint else 0,
    )
    dispatch_on_commit(job, attempt, token)
    return attempt, checkpoint


def redispatch(attempt: Attempt) -> None:
    """Send an unclaimed attempt again (the broker may have lost it) under a fresh token.

    The old token stops working, so a late copy of the old message claims nothing.
    """
    token, token_hash = new_attempt_token()
    with transaction.atomic():
        updated = Attempt.objects.filter(id=attempt.id, status=attempt.status,
                                         dispatched_at=attempt.dispatched_at).update(
            token_hash=token_hash, dispatched_at=timezone.now())
        if updated:
            attempt.refresh_from_db()
            dispatch_on_commit(attempt.job, attempt, token)
