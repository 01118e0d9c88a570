"""Job writes: create, cancel, attempt claims and heartbeats, worker events, the reaper.

Every status change goes through ``state_machine`` (one conditional UPDATE each); the bill is
written in the same transaction as the terminal transition, so a job is never terminal without
its final cost, and a duplicate or stale message can never bill twice.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import random
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from posttrain_server.api.errors import ApiError, ConflictError
from posttrain_server.billing import prices, token_counts
from posttrain_server.billing.models import UsageKind
from posttrain_server.billing.quotas import quota_check
from posttrain_server.billing.quotes import RolloutTokensEstimate, pools_quote
from posttrain_server.billing.selectors import price_rates_current, price_rates_for
from posttrain_server.billing.services import usage_record, usage_totals
from posttrain_server.files.models import File, FileStatus
from posttrain_server.files.selectors import file_get
from posttrain_server.files.services import file_create_result
from posttrain_server.jobs import dispatch
from posttrain_server.jobs.base_models import resolve_model
from posttrain_server.jobs.hyperparameters import (
    resolve_dpo,
    resolve_reinforcement,
    resolve_supervised,
)
from posttrain_server.jobs.models import Attempt, Checkpoint, FineTuningJob, JobEvent
from posttrain_server.jobs.naming import fine_tuned_model_name
from posttrain_server.jobs.selectors import job_get
from posttrain_server.jobs.state_machine import (
    TERMINAL,
    AttemptStatus,
    JobStatus,
    attempt_transition,
    job_transition,
)
from posttrain_server.pools.choice import pool_choose
from posttrain_server.tenancy.models import Organization
from workers import contract
from workers.graders.validation import GraderInvalid, grader_validate
from workers.trainer import eval_plan

logger = logging.getLogger(__name__)

SUPPORTED_METHODS = {"supervised", "dpo", "reinforcement"}
# The dataset format each method trains on (``workers.dataset_rules`` detects it at upload).
METHOD_FORMATS = {"supervised": "chat", "dpo": "preference", "reinforcement": "reinforcement"}
RESOLVERS = {"supervised": resolve_supervised, "dpo": resolve_dpo,
             "reinforcement": resolve_reinforcement}


# --- create -------------------------------------------------------------------------------

def _usable_file(*, organization: Organization, file_id: str, param: str,
                 method: str = "supervised") -> File:
    file = file_get(organization=organization, file_id=file_id, param=param)
    if file.purpose != "fine-tune":
        raise ApiError(f"File {file_id} has purpose {file.purpose!r}, not 'fine-tune'",
                       param=param, code="invalid_file_purpose")
    if file.status == FileStatus.UPLOADED:
        raise ApiError(f"File {file_id} is still being validated; retry when its status is "
                       "'processed'", param=param, code="file_not_ready")
    if file.status == FileStatus.ERROR:
        raise ApiError(f"File {file_id} is invalid: {file.status_details}", param=param,
                       code="invalid_file")
    wanted = METHOD_FORMATS[method]
    found = (file.validation or {}).get("format")
    if found != wanted:
        raise ApiError(f"File {file_id} is a {found} dataset; {method} needs a {wanted} "
                       "dataset", param=param, code="invalid_file_format")
    return file


def _method_request(data: dict[str, Any]) -> dict[str, Any]:
    method = data.get("method")
    if method is None:
        method = {"type": "supervised",
                  "supervised": {"hyperparameters": data.get("hyperparameters") or {}}}
    elif data.get("hyperparameters"):
        raise ApiError("Give hyperparameters inside method, not both", param="hyperparameters")
    if method["type"] not in SUPPORTED_METHODS:
        raise ApiError(f"Method {method['type']!r} is not available yet on this server; "
                       f"use one of {sorted(SUPPORTED_METHODS)}", param="method.type",
                       code="unsupported_method")
    if method["type"] == "reinforcement":
        grader = (method.get("reinforcement") or {}).get("grader")
        if grader is None:
            raise ApiError("A reinforcement job needs a grader", code="missing_grader",
                           param="method.reinforcement.grader")
        try:
            grader_validate(grader)
        except GraderInvalid as exc:
            raise ApiError(f"Invalid grader: {exc.message}", code="invalid_grader",
                           param=f"method.reinforcement.grader{exc.path}") from exc
    return method


def _job_request(*, organization: Organization, data: dict[str, Any]) -> dict[str, Any]:
    """Check and resolve a create (or estimate) request, writing nothing."""
    method = _method_request(data)
    method_type = method["type"]
    training_file = _usable_file(organization=organization, file_id=data["training_file"],
                                 param="training_file", method=method_type)
    validation_file = None
    if data.get("validation_file"):
        validation_file = _usable_file(organization=organization,
                                       file_id=data["validation_file"], param="validation_file",
                                       method=method_type)
    resolved = resolve_model(organization=organization, name=data["model"])
    training_type = data.get("training_type", "lora")
    base_lr = (resolved.lora_learning_rate if training_type == "lora"
               else resolved.full_learning_rate)
    method_body = method.get(method_type) or {}
    requested = method_body.get("hyperparameters") or {}
    hyper = RESOLVERS[method_type](requested, base_learning_rate=base_lr,
                                   example_count=training_file.validation["example_count"])
    learning_rate = hyper.pop("learning_rate")
    stored_method: dict[str, Any] = {"hyperparameters": hyper}
    if method_type == "reinforcement":
        stored_method["grader"] = method_body["grader"]
    seed = data.get("seed")
    if seed is None:
        seed = random.SystemRandom().randint(0, 2**31 - 1)
    lora = data.get("lora") or {"r": 8, "alpha": 16, "dropout": 0.0,
                                "target_modules": "all-linear"}
    training = {
        "type": training_type,
        "lora": lora if training_type == "lora" else None,
        "learning_rate": learning_rate,
        "max_seq_length": data.get("max_seq_length", 512),
        "eval_samples": data.get("eval_samples", 200),
        "lr_scheduler": data.get("lr_scheduler", "linear"),
        "warmup_ratio": data.get("warmup_ratio", 0.0),
        "assistant_only_loss": data.get("assistant_only_loss", True),
        "root_model": resolved.root_name,
        "parent_job": resolved.parent_job,
        "base_lora_learning_rate": resolved.lora_learning_rate,
        "base_full_learning_rate": resolved.full_learning_rate,
    }
    # The rows held out for eval, as the worker will be told (``dispatch.train_message``).
    eval_samples = (training["eval_samples"] if hyper.get("eval_samples") is None
                    else hyper["eval_samples"])
    kept = token_counts.kept_lengths(
        file=training_file, ref=resolved.ref, max_seq_length=training["max_seq_length"],
        eval_samples=eval_samples, has_validation_file=validation_file is not None, seed=seed)
    # What the bill will count as trained tokens: exact, except that a reinforcement job
    # trains on what it generates, bounded by its rollouts (quoted at the bound).
    rollouts = (RolloutTokensEstimate.for_prompts(
        kept, epochs=hyper["n_epochs"], generations=hyper["generations_per_prompt"],
        max_completion_length=hyper["max_completion_length"])
        if method_type == "reinforcement" else None)
    tokens = rollouts.generated_max if rollouts else hyper["n_epochs"] * sum(kept)
    evals = token_counts.eval_workload(
        method=method_type, file=training_file, validation_file=validation_file,
        ref=resolved.ref, eval_samples=eval_samples, seed=seed,
        per_step=hyper["batch_size"], epochs=hyper["n_epochs"],
        max_new_tokens=(hyper["max_completion_length"] if method_type == "reinforcement"
                        else eval_plan.EXACT_MATCH_MAX_NEW_TOKENS),
        checkpoint_every_steps=training.get("checkpoint_every_steps", 0))
    return {"method_type": method["type"], "training_file": training_file,
            "validation_file": validation_file, "resolved": resolved, "hyper": hyper,
            "seed": seed, "training": training, "trained_tokens": tokens,
            "evals": evals, "rollouts": rollouts, "stored_method": stored_method}


def job_create(*, organization: Organization, data: dict[str, Any]) -> FineTuningJob:
    """Check the request, quote it, and write the job and its first attempt, queued on commit.

    Budget and concurrency quotas are checked inside the writing transaction, under a lock
    on the organization's quota row, so parallel creates cannot all slip under a limit.
    """
    request = _job_request(organization=organization, data=data)
    method_type, resolved = request["method_type"], request["resolved"]
    rates = price_rates_current()
    choice = pool_choose(requested=data.get("pool") or settings.DEFAULT_POOL,
                         quotes=pools_quote(method=method_type, size_class=resolved.size_class,
                                            tokens=request["trained_tokens"], rates=rates,
                                            evals=request["evals"],
                                            devices=data.get("devices"),
                                            rollouts=request["rollouts"]))
    quote = choice.quote
    # Devices: what the job asked for ("devices"), else what the pool gives this model size.
    # Also the quote's eval-token bound: calibration times evals in the estimate's own units.
    training = {**request["training"], "gpus": data.get("devices") or quote.gpus,
                "quoted_eval_tokens": quote.eval.maximum if quote.eval else 0}
    token, token_hash = dispatch.new_attempt_token()
    with transaction.atomic():
        quota_check(organization=organization, quoted_cost=quote.cost.total)
        job = FineTuningJob.objects.create(
            organization=organization, model=data["model"],
            base_model=resolved.ref.model_dump(mode="json"), size_class=resolved.size_class,
            status=JobStatus.QUEUED, training_file=request["training_file"],
            validation_file=request["validation_file"],
            method={"type": method_type, method_type: request["stored_method"]},
            training=training, suffix=data.get("suffix") or "", seed=request["seed"],
            metadata=data.get("metadata") or {}, pool=quote.pool,
            price_version=rates.version, quoted_cost=quote.cost.total,
            max_cost=data.get("max_cost"),
        )
        attempt = Attempt.objects.create(job=job, number=1, token_hash=token_hash,
                                         dispatched_at=timezone.now())
        event_platform(job, f"Created fine-tuning job: {job.id}")
        event_platform(job, f"Job queued on pool '{quote.pool}' ({quote.accelerator}, "
                       f"{quote.gpus} GPU{'s' if quote.gpus != 1 else ''}): estimated "
                       + (f"at most {quote.tokens:,} trained (generated) tokens and "
                          f"{quote.rollouts.maximum:,} rollout tokens, " if quote.rollouts
                          else f"{quote.tokens:,} trained tokens, at most ")
                       + f"{quote.eval.maximum if quote.eval else 0:,} eval tokens, "
                       f"${quote.cost.total} "
                       f"(price book {rates.version})",
                       data={"estimate": quote.as_dict(), "requested_pool": choice.requested})
        if quote.workers_online == 0:
            event_platform(job, f"No worker is online for pool '{quote.pool}' yet; the job "
                           f"waits in queue {contract.train_queue(quote.pool)} until one "
                           "starts", level="warn")
        dispatch.dispatch_on_commit(job, attempt, token)
    job.refresh_from_db()
    return job


# --- events written by the platform ---------------------------------------------------------

def event_platform(job: FineTuningJob, message: str, *, level: str = "info",
                   data: dict[str, Any] | None = None) -> JobEvent:
    return JobEvent.objects.create(job=job, message=message, level=level, data=data)


# --- cancel ---------------------------------------------------------------------------------

def job_cancel(*, organization: Organization, job_id: str) -> FineTuningJob:
    """Queued jobs stop at once; running ones are asked to stop at their next step.

    Cancel is cooperative (the trainer checks a flag each step), never a kill: the last
    checkpoint is kept and the time that ran is billed.
    """
    job = job_get(organization=organization, job_id=job_id)
    if job.status in TERMINAL:
        raise ConflictError(f"Job {job_id} has already {job.status} and cannot be cancelled",
                            param="fine_tuning_job_id", code="job_not_cancellable")
    with transaction.atomic():
        if job_transition(job.id, JobStatus.CANCELLED,
                          only_from={JobStatus.VALIDATING_FILES, JobStatus.QUEUED,
                                     JobStatus.PAUSED}):
            Attempt.objects.filter(job=job, status=AttemptStatus.DISPATCHED).update(
                status=AttemptStatus.CANCELLED, finished_at=timezone.now())
            job.refresh_from_db()
            _write_bill(job)
            event_platform(job, "Fine-tuning job cancelled before it started")
        elif FineTuningJob.objects.filter(id=job.id, cancel_requested_at__isnull=True).update(
                cancel_requested_at=timezone.now()):
            event_platform(job, "Cancellation requested; the trainer stops at its next step")
    job.refresh_from_db()
    return job


# --- attempts: claim and heartbeat (the lease) ----------------------------------------------

def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def attempt_claim(*, attempt_id: str, token: str, worker: str) -> bool:
    """Grant the attempt to exactly one worker: a second delivery of the message gets False."""
    now = timezone.now()
    with transaction.atomic():
        claimed = Attempt.objects.filter(
            id=attempt_id, token_hash=_hash(token), status=AttemptStatus.DISPATCHED,
        ).update(status=AttemptStatus.RUNNING, claimed_at=now, heartbeat_at=now,
                 worker=worker[:200])
        if not claimed:
            return False
        attempt = Attempt.objects.select_related("job").get(id=attempt_id)
        job = attempt.job
        if not job_transition(job.id, JobStatus.RUNNING, only_from={JobStatus.QUEUED},
                              started_at=job.started_at or now):
            transaction.set_rollback(True)
            return False
        resumed = (f", resuming from checkpoint "
                   f"{attempt.resume_from_key.rsplit('/', 1)[-1].removesuffix('.tar')}"
                   if attempt.resume_from_key else "")
        event_platform(job, f"Attempt {attempt.number} started on worker {worker}{resumed}")
    return True


def attempt_heartbeat(*, attempt_id: str, token: str) -> dict[str, Any] | None:
    """Renew the lease. None: the lease is lost (reaped or finished), so the worker must stop."""
    attempt = Attempt.objects.select_related("job").filter(
        id=attempt_id, token_hash=_hash(token)).first()
    if attempt is None:
        return None
    renewed = Attempt.objects.filter(id=attempt_id, status=AttemptStatus.RUNNING).update(
        heartbeat_at=timezone.now())
    if not renewed:
        return None
    return {"lease": True, "cancel_requested": attempt.job.cancel_requested_at is not None,
            "pause_requested": attempt.job.status == JobStatus.PAUSING}


# --- worker events --------------------------------------------------------------------------

def event_apply(*, event: contract.JobEvent) -> bool:
    """Apply one worker event exactly once; False when it was a duplicate or unknown."""
    job = FineTuningJob.objects.filter(id=event.job_id).first()
    if job is None:
        logger.warning("event for unknown job %s dropped", event.job_id)
        return False
    attempt = Attempt.objects.filter(job=job, number=event.attempt).first()
    if attempt is None:
        return False
    public_type = "metrics" if event.type == "metrics" else "message"
    try:
        with transaction.atomic():
            JobEvent.objects.create(
                job=job, attempt=event.attempt, seq=event.seq, level=event.level,
                type=public_type, message=event.message, data=event.data or None,
            )
            if event.type == "metrics":
                _apply_metrics(job, attempt, event.data)
            elif event.type == "checkpoint":
                _apply_checkpoint(job, attempt, contract.CheckpointData(**event.data))
            elif event.type == "finished":
                attempt_finish(job=job, attempt=attempt,
                               result=contract.FinishedData(**event.data))
    except IntegrityError:
        return False  # (job, attempt, seq) already applied
    return True


def _apply_metrics(job: FineTuningJob, attempt: Attempt, data: dict[str, Any]) -> None:
    if attempt.status != AttemptStatus.RUNNING:
        return
    attempt_tokens = int(data.get("attempt_trained_tokens", 0))
    Attempt.objects.filter(id=attempt.id, reported_tokens__lt=attempt_tokens).update(
        reported_tokens=attempt_tokens)
    fields: dict[str, Any] = {"progress": data}
    if data.get("trained_tokens") is not None:
        fields["trained_tokens"] = int(data["trained_tokens"])
    step, total, elapsed = data.get("step"), data.get("total_steps"), data.get("elapsed_s")
    if step and total and elapsed:
        remaining = float(elapsed) / float(step) * max(0, float(total) - float(step))
        fields["estimated_finish"] = timezone.now() + timezone.timedelta(seconds=remaining)
    FineTuningJob.objects.filter(id=job.id, status=JobStatus.RUNNING).update(**fields)


def _apply_checkpoint(job: FineTuningJob, attempt: Attempt, data: contract.CheckpointData) -> None:
    if attempt.status == AttemptStatus.LOST:
        return  # a reaped attempt must not add resume points behind its successor's back
    Checkpoint.objects.get_or_create(
        job=job, step=data.step,
        defaults={"attempt": attempt.number, "storage_key": data.key,
                  "trained_tokens": data.trained_tokens, "metrics": data.metrics},
    )
    if data.eval_tokens and attempt.status == AttemptStatus.RUNNING:
        # Metered on arrival, so a checkpoint's eval is billed even if the attempt is lost
        # later; the finished event repeats it under the same key (a no-op).
        usage_record(job=job, attempt=attempt.number, kind=UsageKind.EVAL_TOKENS,
                     quantity=Decimal(data.eval_tokens),
                     segment=eval_plan.checkpoint_segment(data.step))


def attempt_finish(*, job: FineTuningJob, attempt: Attempt,
                   result: contract.FinishedData) -> bool:
    """The attempt's last word: usage, bill and terminal status, in one transaction.

    Only the attempt holding the lease may finish the job; a stale attempt (reaped while it
    was still running) is recorded but changes nothing.
    """
    if result.status == "paused":
        return _attempt_paused(job=job, attempt=attempt, result=result)
    target = {"succeeded": AttemptStatus.SUCCEEDED, "failed": AttemptStatus.FAILED,
              "cancelled": AttemptStatus.CANCELLED,
              "preempted": AttemptStatus.PREEMPTED}[result.status]
    with transaction.atomic():
        if not attempt_transition(attempt.id, target, only_from={AttemptStatus.RUNNING},
                                  finished_at=timezone.now(),
                                  reported_tokens=result.trained_tokens):
            event_platform(job, f"Ignored the result of attempt {attempt.number}: it no "
                           "longer holds the job's lease", level="warn")
            return False
        _record_attempt_usage(job, attempt.number, result)
        if result.grader_errors:
            event_platform(job, f"{result.grader_errors} grader results were errors (NaN, "
                           "infinite, not a number or a sandbox failure) and scored 0",
                           level="warn")
        if result.status == "preempted":
            job.refresh_from_db()
            return _requeue(job, f"Attempt {attempt.number} was handed back by its worker "
                            "(draining) after a checkpoint", timezone.now())
        fields: dict[str, Any] = {
            "trained_tokens": attempt.resume_trained_tokens + result.trained_tokens,
            "eval": _eval_block(result),
            "error": result.error,
            "estimated_finish": None,
        }
        if result.status == "succeeded" and result.adapter_key:
            job.refresh_from_db()
            fields.update(fine_tuned_model=fine_tuned_model_name(job),
                          adapter_key=result.adapter_key,
                          adapter_kind=result.adapter_kind or "")
        status = JobStatus(result.status)
        if not _finalize(job, status, **fields):
            return False
        job.refresh_from_db()
        messages = {
            "succeeded": "The job has successfully completed",
            "failed": f"The job failed: {(result.error or {}).get('message', 'unknown error')}",
            "cancelled": f"The job was cancelled after {result.steps} steps",
        }
        event_platform(job, messages[result.status],
                       level="error" if result.status == "failed" else "info")
        if job.fine_tuned_model:
            event_platform(job, f"New fine-tuned model created: {job.fine_tuned_model}")
    return True


def _attempt_paused(*, job: FineTuningJob, attempt: Attempt,
                    result: contract.FinishedData) -> bool:
    """The worker stopped with a checkpoint (pause asked, or max_cost reached): bill what ran,
    keep the checkpoint, and wait for ``resume``. A cancel asked meanwhile wins."""
    with transaction.atomic():
        if not attempt_transition(attempt.id, AttemptStatus.PAUSED,
                                  only_from={AttemptStatus.RUNNING},
                                  finished_at=timezone.now(),
                                  reported_tokens=result.trained_tokens):
            event_platform(job, f"Ignored the result of attempt {attempt.number}: it no "
                           "longer holds the job's lease", level="warn")
            return False
        _record_attempt_usage(job, attempt.number, result)
        job.refresh_from_db()
        tokens = attempt.resume_trained_tokens + result.trained_tokens
        if job.cancel_requested_at is not None:
            return _finalize(job, JobStatus.CANCELLED, trained_tokens=tokens,
                             estimated_finish=None)
        budget = result.stop_reason == "budget"
        if not job_transition(job.id, JobStatus.PAUSED,
                              only_from={JobStatus.RUNNING, JobStatus.PAUSING},
                              trained_tokens=tokens, estimated_finish=None,
                              error=result.error if budget else None):
            transaction.set_rollback(True)
            return False
        job.refresh_from_db()
        _write_bill(job)
        job.refresh_from_db()
        reason = ((result.error or {}).get("message", "max_cost reached") if budget
                  else "pause requested")
        event_platform(job, f"The job is paused after {result.steps} steps ({reason}); its "
                       f"checkpoint is kept and ${job.cost_tokens + job.cost_compute} billed so "
                       "far. Resume to continue" + (" after raising max_cost" if budget else ""),
                       data={"reason": "max_cost" if budget else "user", "steps": result.steps})
    return True


def _record_attempt_usage(job: FineTuningJob, attempt: int, result: contract.FinishedData
                          ) -> None:
    """An attempt's usage rows: trained and rollout tokens, one eval-tokens row per eval
    segment (before, each scored checkpoint, after), and its GPU-seconds."""
    _record_usage(job, attempt, result.trained_tokens, Decimal(str(result.device_seconds)),
                  result.rollout_tokens)
    for segment, tokens in sorted(result.eval_tokens.items()):
        if tokens:
            usage_record(job=job, attempt=attempt, kind=UsageKind.EVAL_TOKENS,
                         quantity=Decimal(tokens), segment=segment)
    if result.eval_seconds or result.train_seconds:
        FineTuningJob.objects.filter(id=job.id).update(
            eval_seconds=F("eval_seconds") + Decimal(str(result.eval_seconds)),
            train_seconds=F("train_seconds") + Decimal(str(result.train_seconds)))


def _record_usage(job: FineTuningJob, attempt: int, tokens: int, device_seconds: Decimal,
                  rollout_tokens: int = 0) -> None:
    usage_record(job=job, attempt=attempt, kind=UsageKind.TRAINED_TOKENS,
                 quantity=Decimal(tokens))
    if rollout_tokens:
        usage_record(job=job, attempt=attempt, kind=UsageKind.ROLLOUT_TOKENS,
                     quantity=Decimal(rollout_tokens))
    usage_record(job=job, attempt=attempt, kind=UsageKind.DEVICE_SECONDS,
                 quantity=device_seconds.quantize(Decimal("0.001")))


def _eval_block(result: contract.FinishedData) -> dict[str, Any] | None:
    if result.eval_metric is None:
        return None
    block: dict[str, Any] = {"metric": result.eval_metric, "before": result.eval_before,
                             "after": result.eval_after}
    if result.eval_more:
        block["more"] = result.eval_more
    return block


def _write_bill(job: FineTuningJob) -> None:
    """Cost from the job's usage rows and the price table; gain per dollar from its eval."""
    totals = usage_totals(job=job)
    tokens = int(totals[UsageKind.TRAINED_TOKENS])
    device_seconds = totals[UsageKind.DEVICE_SECONDS]
    rollout_tokens = int(totals[UsageKind.ROLLOUT_TOKENS])
    eval_tokens = int(totals[UsageKind.EVAL_TOKENS])
    cost = prices.job_cost(method=job.method_type, size_class=job.size_class, pool=job.pool,
                           trained_tokens=tokens, device_seconds=device_seconds,
                           rollout_tokens=rollout_tokens, eval_tokens=eval_tokens,
                           rates=price_rates_for(version=job.price_version))
    evaluation = job.eval
    if evaluation and evaluation.get("before") is not None and evaluation.get("after") is not None:
        gain = evaluation["after"] - evaluation["before"]
        evaluation = {**evaluation, "gain": gain,
                      "gain_per_dollar": (float(Decimal(str(gain)) / cost.total)
                                          if cost.total > 0 else None)}
    FineTuningJob.objects.filter(id=job.id).update(
        device_seconds=device_seconds, rollout_tokens=rollout_tokens, eval_tokens=eval_tokens,
        cost_tokens=cost.tokens, cost_compute=cost.compute, price_version=cost.price_version,
        cost_tokens_by_kind={kind: str(part) for kind, part in cost.tokens_by_kind.items()},
        eval=evaluation,
    )


def _finalize(job: FineTuningJob, status: JobStatus, **fields: Any) -> bool:
    """Terminal transition + bill + results file; the caller holds the transaction."""
    if not job_transition(job.id, status, **fields):
        return False
    job.refresh_from_db()
    _write_bill(job)
    results = _results_file(job)
    if results is not None:
        FineTuningJob.objects.filter(id=job.id).update(result_files=[results.id])
    return True


def _results_file(job: FineTuningJob) -> File | None:
    """OpenAI's result file: a CSV of the training metrics, one row per logged step."""
    rows = list(JobEvent.objects.filter(job=job, type="metrics").order_by("attempt", "seq")
                .values_list("data", flat=True))
    if not rows:
        return None
    columns = ["step", "train_loss", "train_mean_token_accuracy", "learning_rate",
               "trained_tokens", "epoch"]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for data in rows:
        writer.writerow([data.get(column, "") for column in columns])
    return file_create_result(organization=job.organization, filename=f"{job.id}-results.csv",
                              content=buffer.getvalue().encode())


# --- the reaper -----------------------------------------------------------------------------

def reap(*, now: Any = None) -> dict[str, int]:
    """Re-queue attempts whose heartbeat stopped, and re-send attempts nobody claimed.

    The broker alone cannot be trusted to redeliver a job whose worker died (TRAINING_NOTES:
    the filesystem transport deletes the message at pickup), so the database decides.
    """
    now = now or timezone.now()
    lease_cutoff = now - timezone.timedelta(seconds=settings.LEASE_TIMEOUT_S)
    dispatch_cutoff = now - timezone.timedelta(seconds=settings.DISPATCH_TIMEOUT_S)
    counts = {"lost": 0, "redispatched": 0}
    for attempt in Attempt.objects.filter(status=AttemptStatus.RUNNING,
                                          heartbeat_at__lt=lease_cutoff).select_related("job"):
        if _recover_lost_attempt(attempt, now):
            counts["lost"] += 1
    for attempt in Attempt.objects.filter(status=AttemptStatus.DISPATCHED,
                                          dispatched_at__lt=dispatch_cutoff,
                                          job__status=JobStatus.QUEUED).select_related("job"):
        dispatch.redispatch(attempt)
        counts["redispatched"] += 1
    return counts


def _recover_lost_attempt(attempt: Attempt, now: Any) -> bool:
    job = attempt.job
    with transaction.atomic():
        if not attempt_transition(attempt.id, AttemptStatus.LOST,
                                  only_from={AttemptStatus.RUNNING}, finished_at=now):
            return False  # another reaper, or the worker's result, got there first
        seconds = Decimal(str(max(0.0, (attempt.heartbeat_at - attempt.claimed_at)
                                  .total_seconds()))) * job.training.get("gpus", 1)
        _record_usage(job, attempt.number, attempt.reported_tokens, seconds)
        job.refresh_from_db()
        lost = job.attempts.filter(status=AttemptStatus.LOST).count()
        if job.status == JobStatus.PAUSING:  # asked to pause: the lost attempt's checkpoint
            job_transition(job.id, JobStatus.PAUSED, only_from={JobStatus.PAUSING},
                           estimated_finish=None)
            job.refresh_from_db()
            _write_bill(job)
            event_platform(job, f"Attempt {attempt.number} lost its worker while pausing; "
                           "the job is paused")
            return True
        if job.cancel_requested_at is not None:
            _finalize(job, JobStatus.CANCELLED)
            event_platform(job, f"Attempt {attempt.number} lost its worker; the job was "
                           "cancelled as requested")
            return True
        if lost >= settings.MAX_ATTEMPTS:
            error = {"code": "worker_lost", "param": None,
                     "message": f"The worker stopped responding {lost} times "
                                f"(limit {settings.MAX_ATTEMPTS}); giving up."}
            _finalize(job, JobStatus.FAILED, error=error)
            event_platform(job, error["message"], level="error")
            return True
        return _requeue(job, f"Attempt {attempt.number} stopped heartbeating", now)


def _requeue(job: FineTuningJob, reason: str, now: Any) -> bool:
    """Queue a new attempt that resumes from the job's last checkpoint (caller's transaction).

    Used when a worker is lost (reaper) and when one hands its job back (preemption, drain).
    """
    if not job_transition(job.id, JobStatus.QUEUED, only_from={JobStatus.RUNNING}):
        transaction.set_rollback(True)
        return False
    retry, checkpoint = dispatch.resuming_attempt(job, now)
    where = f"from step {checkpoint.step}" if checkpoint else "from the start"
    event_platform(job, f"{reason}; retrying as attempt {retry.number} {where}", level="warn")
    return True
