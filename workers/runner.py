"""One attempt of one job, on this worker: claim, fetch, train in a child, report, upload.

The trainer runs as a child process (``python -m workers.trainer.sft``, ``.dpo`` or ``.grpo``
by the job's method) that prints one JSON
object per line on stdout. This process owns everything the child should not: the lease
(heartbeats), cancellation (a stop-flag file the trainer checks every step), uploads to
object storage, and the events sent to the platform. A crash or OOM of the child becomes a
``failed`` result with the end of its log, never a dead worker.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from workers import contract, drain, env
from workers.model_store import ModelUnavailable, materialize
from workers.storage import Storage, default_storage

logger = logging.getLogger("posttrain.worker")

Publish = Callable[[contract.JobEvent], None]


class EventsUndeliverable(Exception):
    """The broker would not take an event even after retrying (see ``publish_event``)."""


class PlatformClient:
    """The worker's only synchronous link to the platform: claim and heartbeat."""

    def __init__(self, job: contract.TrainJob) -> None:
        self._base = f"{job.platform_url.rstrip('/')}/internal/attempts/{job.attempt_id}"
        self._headers = {"Authorization": f"Bearer {job.attempt_token}"}

    def _post(self, action: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return httpx.post(f"{self._base}/{action}", json=body or {}, headers=self._headers,
                          timeout=10.0)

    def claim(self, worker: str) -> bool:
        for delay in (0.5, 1, 2, 4, 8):  # the platform may be restarting
            try:
                response = self._post("claim", {"worker": worker})
            except httpx.TransportError:
                time.sleep(delay)
                continue
            return response.status_code == 200
        return False

    def heartbeat(self) -> dict[str, Any] | None:
        """The platform's answer; {} when it could not be reached (keep going, retry later)."""
        try:
            response = self._post("heartbeat")
        except httpx.TransportError:
            return {}
        if response.status_code == 409:
            return None
        return response.json() if response.status_code == 200 else {}


class Reporter:
    """Numbers every event of the attempt, so the platform can apply each exactly once."""

    def __init__(self, job: contract.TrainJob, publish: Publish) -> None:
        self.job, self.publish, self.seq = job, publish, 0

    def send(self, type_: contract.EventType, message: str, data: dict[str, Any] | None = None,
             level: str = "info") -> None:
        event = contract.JobEvent(job_id=self.job.job_id, attempt=self.job.attempt, seq=self.seq,
                                  type=type_, level=level, message=message, data=data or {},
                                  created_at=time.time())
        self.seq += 1
        self.publish(event)


def _reader(stream: Any, out: queue.Queue) -> None:
    for line in stream:
        line = line.strip()
        if not line:
            continue
        try:
            out.put(json.loads(line))
        except json.JSONDecodeError:
            logger.info("trainer: %s", line)
    out.put(None)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def trainer_command(job: contract.TrainJob, spec_path: Path) -> list[str]:
    """One process per device: more than one device runs the same entry point under torchrun.

    ``--standalone`` gives a private rendezvous on a free port, so two multi-device jobs on one
    host never meet. On the ``cpu`` pool the processes use the gloo backend.
    """
    module = ["-m", f"workers.trainer.{job.method_module}", str(spec_path)]
    if job.gpus <= 1:
        return [sys.executable, *module]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc_per_node", str(job.gpus), *module]


def run_attempt(job: contract.TrainJob, *, publish: Publish,
                heartbeat_interval: float | None = None) -> str | None:
    """Run one attempt to its end; returns the terminal status sent, or None if not claimed."""
    client = PlatformClient(job)
    worker = f"{contract.train_queue(job.pool)}@{socket.gethostname()}:{os.getpid()}"
    if not client.claim(worker):
        logger.info("attempt %s of %s not granted; another worker has it or it was cancelled",
                    job.attempt, job.job_id)
        return None
    interval = heartbeat_interval or env.env_float("POSTTRAIN_HEARTBEAT_INTERVAL_S", 2.0,
                                                   minimum=0.1)
    reporter = Reporter(job, publish)
    storage = default_storage()
    workdir = Path(env.env_str("POSTTRAIN_WORK_DIR", str(env.var_dir() / "work"))) / (
        f"{job.job_id}-{job.attempt}")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    started = time.monotonic()
    result: dict[str, Any] = {"status": "failed", "error": None}
    try:
        result = _train(job, client, reporter, storage, workdir, interval,
                        started_at=time.time())
    except EventsUndeliverable:
        # Nothing can be reported, not even a failure: stop heartbeating and let the reaper
        # resume the job from its last checkpoint (a lost worker, as far as it can tell).
        logger.warning("attempt %s of %s stopped: the broker is unreachable", job.attempt,
                       job.job_id)
        shutil.rmtree(workdir, ignore_errors=True)
        return None
    except ModelUnavailable as exc:
        result = {"status": "failed", "error": {"code": "model_unavailable", "message": str(exc),
                                                "param": "model"}}
    except Exception as exc:  # the job fails with a reason; the worker lives on
        logger.exception("attempt %s of %s failed", job.attempt, job.job_id)
        result = {"status": "failed", "error": {"code": "worker_error", "param": None,
                                                "message": f"{type(exc).__name__}: {exc}"}}
    finished = contract.FinishedData(
        device_seconds=round((time.monotonic() - started) * job.gpus, 3), **result)
    reporter.send("finished", f"Attempt {job.attempt} finished: {finished.status}",
                  finished.model_dump(mode="json"),
                  level="error" if finished.status == "failed" else "info")
    shutil.rmtree(workdir, ignore_errors=True)
    return finished.status


def _train(job: contract.TrainJob, client: PlatformClient, reporter: Reporter,
           storage: Storage, workdir: Path, interval: float, *,
           started_at: float) -> dict[str, Any]:
    source = materialize(job.base_model, workdir, storage)
    train_path = storage.download(job.training_file, workdir / "train.jsonl")
    valid_path = (storage.download(job.validation_file, workdir / "validation.jsonl")
                  if job.validation_file else None)
    resume_dir = None
    if job.resume_from_checkpoint:
        step = job.resume_from_checkpoint.rsplit("step-", 1)[-1].removesuffix(".tar")
        resume_dir = storage.download_dir(job.resume_from_checkpoint,
                                          workdir / "output" / f"checkpoint-{step}")
    stop_flag = workdir / "stop"
    spec = {
        "model_dir": str(source.model_dir),
        "adapter_dirs": [str(path) for path in source.adapter_dirs],
        "train_path": str(train_path),
        "validation_path": str(valid_path) if valid_path else None,
        "output_dir": str(workdir / "output"),
        "final_dir": str(workdir / "final"),
        "resume_dir": str(resume_dir) if resume_dir else None,
        "resume_trained_tokens": job.resume_trained_tokens,
        "stop_flag": str(stop_flag),
        "hyperparameters": job.hyperparameters.model_dump(),
        "lora": job.lora.model_dump() if job.lora else None,
        "seed": job.seed,
        "assistant_only_loss": job.assistant_only_loss,
        "eval_samples": job.eval_samples,
        "dpo": job.dpo.model_dump() if job.dpo else None,
        "reinforcement": job.reinforcement.model_dump() if job.reinforcement else None,
        "budget": job.budget.model_dump() if job.budget else None,
        "attempt_started_at": started_at,  # the budget counts GPU time from the attempt start
    }
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    log_path = workdir / "trainer.log"
    reporter.send("message", f"Training started: {job.method}, "
                  f"{'LoRA r=' + str(job.lora.r) if job.lora else 'full fine-tuning'}, "
                  f"{job.hyperparameters.n_epochs} epochs, batch {job.hyperparameters.batch_size}")
    with log_path.open("wb") as log:
        child = subprocess.Popen(  # noqa: S603 - our own module, fixed arguments
            trainer_command(job, spec_path),
            stdout=subprocess.PIPE, stderr=log, text=True, cwd=env.repo_root(),
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
        )
    try:
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(child.stdout, lines), daemon=True).start()
        done: dict[str, Any] | None = None
        last_checkpoint: str | None = None
        stop_reason: str | None = None
        next_beat = time.monotonic() + interval
        while True:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                line = ...
            if line is None:
                break
            if isinstance(line, dict):
                kind = line.pop("type", None)
                if kind == "metrics":
                    text = ", ".join(f"{k}={_fmt(line[k])}" for k in (
                        "train_loss", "train_mean_token_accuracy", "train_reward_accuracy",
                        "train_mean_reward") if line.get(k) is not None)
                    reporter.send("metrics", f"Step {line.get('step')}/{line.get('total_steps')}: "
                                  f"{text}", line)
                elif kind == "checkpoint":
                    key = f"jobs/{job.job_id}/attempt-{job.attempt}/step-{line['step']}.tar"
                    storage.upload_dir(key, Path(line["dir"]))
                    last_checkpoint = key
                    data = contract.CheckpointData(step=line["step"], key=key,
                                                   trained_tokens=line["trained_tokens"],
                                                   metrics=line.get("metrics", {}),
                                                   eval_tokens=line.get("eval_tokens", 0))
                    scored = ", ".join(f"{k}={_fmt(v)}" for k, v in data.metrics.items()
                                       if k.startswith("eval_") and k != "eval_samples")
                    reporter.send("checkpoint", f"Checkpoint saved at step {line['step']}"
                                  + (f" ({scored} on {int(data.metrics['eval_samples'])} "
                                     "held-out examples)" if scored else ""), data.model_dump())
                elif kind == "warning":
                    reporter.send("message", line["message"], level="warn")
                elif kind == "eval":
                    reporter.send("message", f"Eval {line['phase']}: {line['metric']}="
                                  f"{line['score']:.4f} on {line['samples']} held-out examples",
                                  line)
                elif kind == "done":
                    done = line
            if stop_reason is None and drain.drain_requested():
                stop_reason = "preempted"
                stop_flag.write_text(stop_reason)
                reporter.send("message", "Stopping at the next step: this worker is draining; "
                              "the job goes back to the queue after a checkpoint")
            if time.monotonic() >= next_beat and stop_reason is None:
                next_beat = time.monotonic() + interval
                state = client.heartbeat()
                if state is None:
                    stop_reason = "lease_lost"
                elif state.get("cancel_requested"):
                    stop_reason = "cancelled"
                elif state.get("pause_requested"):
                    stop_reason = "paused"
                if stop_reason:
                    stop_flag.write_text(stop_reason)
                    reporter.send("message", "Stopping at the next step: " + {
                        "cancelled": "cancellation requested",
                        "paused": "pause requested; the job keeps its checkpoint",
                        "lease_lost": "this worker lost the job's lease"}[stop_reason])
        returncode = child.wait()
    except BaseException:
        # The attempt ends here (a broker that stayed down, a bug): its trainer must not
        # train on unseen while the reaper hands the job to another worker, which would
        # make two runners for one job.
        if child.poll() is None:
            child.kill()
            child.wait()
        raise
    if done is None or returncode != 0:
        return {"status": "failed", "last_checkpoint_key": last_checkpoint,
                "error": {"code": "trainer_crashed", "param": None,
                          "message": f"trainer exited with code {returncode}: "
                                     f"{_tail(log_path)}"}}
    common = {"trained_tokens": done["trained_tokens"], "steps": done["steps"],
              "eval_metric": done.get("eval_metric"), "eval_before": done.get("eval_before"),
              "eval_after": done.get("eval_after"), "eval_more": done.get("eval_more") or {},
              "rollout_tokens": done.get("rollout_tokens", 0),
              "grader_errors": done.get("grader_errors", 0),
              "eval_tokens": done.get("eval_tokens") or {},
              "eval_seconds": done.get("eval_seconds", 0.0),
              "train_seconds": done.get("train_seconds", 0.0),
              "last_checkpoint_key": last_checkpoint}
    if done["stopped"]:
        reason = done.get("stop_reason") or stop_reason or "lease_lost"
        status = {"cancelled": "cancelled", "paused": "paused", "budget": "paused",
                  "preempted": "preempted"}.get(reason, "failed")
        error = {"budget": {"code": "max_cost_reached", "param": "max_cost",
                            "message": done.get("stop_message") or "the job reached its "
                            "max_cost"},
                 "lease_lost": {"code": "lease_lost", "param": None,
                                "message": "the worker lost the job's lease"}}.get(reason)
        return {"status": status, "error": error, "stop_reason": reason, **common}
    adapter_key = f"jobs/{job.job_id}/model.tar"
    storage.upload_dir(adapter_key, Path(done["final_dir"]))
    return {"status": "succeeded", "adapter_key": adapter_key,
            "adapter_kind": "lora" if job.lora else "full", **common}
