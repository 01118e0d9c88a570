"""``client.fine_tuning.jobs``: create, list, retrieve, cancel, wait, events, checkpoints."""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from posttrain._archive import safe_extract
from posttrain._base_client import (
    AsyncAPIClient,
    AsyncPager,
    Emit,
    PagePlan,
    Plan,
    Request,
    Sleep,
    SyncAPIClient,
    SyncPager,
)
from posttrain._exceptions import WaitTimeoutError
from posttrain._progress import make_reporter
from posttrain.resources._resource import Resource, segment
from posttrain.types import (
    CursorPage,
    FineTuningJob,
    FineTuningJobCheckpoint,
    FineTuningJobEvent,
    GraderRun,
    GraderValidation,
    JobEstimate,
)

Progress = bool | Callable[[FineTuningJob], Any]
EVENTS_PAGE = 100


def create_body(*, model: str, training_file: str, validation_file: str | None,
                method: Mapping[str, Any] | None, hyperparameters: Mapping[str, Any] | None,
                suffix: str | None, seed: int | None, metadata: Mapping[str, str] | None,
                pool: str | None, training_type: str | None, lora: Mapping[str, Any] | None,
                max_seq_length: int | None, eval_samples: int | None,
                extra_body: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request body; an argument left as None is omitted, so the server's default holds."""
    body: dict[str, Any] = {"model": model, "training_file": training_file}
    optional = {"validation_file": validation_file, "method": method,
                "hyperparameters": hyperparameters, "suffix": suffix, "seed": seed,
                "metadata": metadata, "pool": pool, "training_type": training_type,
                "lora": lora, "max_seq_length": max_seq_length, "eval_samples": eval_samples}
    body.update({key: value for key, value in optional.items() if value is not None})
    body.update(extra_body or {})
    return body


def job_path(job_id: str, suffix: str = "") -> str:
    return f"/fine_tuning/jobs/{segment(job_id)}{suffix}"


def create_plan(body: dict[str, Any], idempotency_key: str | None) -> Plan[FineTuningJob]:
    result: FineTuningJob = yield Request("POST", "/fine_tuning/jobs", cast=FineTuningJob,
                                          json=body, idempotency_key=idempotency_key)
    return result


def estimate_plan(body: dict[str, Any]) -> Plan[JobEstimate]:
    result: JobEstimate = yield Request("POST", "/fine_tuning/jobs/estimate", cast=JobEstimate,
                                        json=body)
    return result


def pause_plan(job_id: str, idempotency_key: str | None) -> Plan[FineTuningJob]:
    result: FineTuningJob = yield Request("POST", job_path(job_id, "/pause"),
                                          cast=FineTuningJob, idempotency_key=idempotency_key)
    return result


def resume_plan(job_id: str, body: dict[str, Any], idempotency_key: str | None
                ) -> Plan[FineTuningJob]:
    result: FineTuningJob = yield Request("POST", job_path(job_id, "/resume"),
                                          cast=FineTuningJob, json=body,
                                          idempotency_key=idempotency_key)
    return result


def resume_body(max_cost: Decimal | str | None, clear_max_cost: bool) -> dict[str, Any]:
    """``max_cost`` as a decimal string (never a float); ``clear_max_cost`` sends null."""
    if clear_max_cost:
        return {"max_cost": None}
    return {} if max_cost is None else {"max_cost": str(Decimal(str(max_cost)))}


def grader_run_plan(body: dict[str, Any]) -> Plan[GraderRun]:
    result: GraderRun = yield Request("POST", "/fine_tuning/alpha/graders/run", cast=GraderRun,
                                      json=body)
    return result


def grader_validate_plan(grader: Mapping[str, Any]) -> Plan[GraderValidation]:
    result: GraderValidation = yield Request("POST", "/fine_tuning/alpha/graders/validate",
                                             cast=GraderValidation, json={"grader": grader})
    return result


def retrieve_plan(job_id: str) -> Plan[FineTuningJob]:
    result: FineTuningJob = yield Request("GET", job_path(job_id), cast=FineTuningJob)
    return result


def cancel_plan(job_id: str, idempotency_key: str | None) -> Plan[FineTuningJob]:
    result: FineTuningJob = yield Request("POST", job_path(job_id, "/cancel"),
                                          cast=FineTuningJob, idempotency_key=idempotency_key)
    return result


def list_plan(limit: int | None, metadata: Mapping[str, str] | None
              ) -> PagePlan[FineTuningJob]:
    params: dict[str, Any] = {"limit": limit}
    params.update({f"metadata[{key}]": value for key, value in (metadata or {}).items()})

    def page(after: str | None) -> Plan[CursorPage[FineTuningJob]]:
        result: CursorPage[FineTuningJob] = yield Request(
            "GET", "/fine_tuning/jobs", cast=CursorPage[FineTuningJob],
            params={**params, "after": after})
        return result
    return page


def checkpoints_plan(job_id: str, limit: int | None) -> PagePlan[FineTuningJobCheckpoint]:
    def page(after: str | None) -> Plan[CursorPage[FineTuningJobCheckpoint]]:
        result: CursorPage[FineTuningJobCheckpoint] = yield Request(
            "GET", job_path(job_id, "/checkpoints"), cast=CursorPage[FineTuningJobCheckpoint],
            params={"after": after, "limit": limit})
        return result
    return page


def wait_plan(job_id: str, *, progress: Progress, poll_interval: float,
              timeout: float | None) -> Plan[FineTuningJob]:
    """Poll the job until its status is terminal, feeding every poll to the progress display."""
    deadline = None if timeout is None else time.monotonic() + timeout
    reporter = make_reporter(progress)
    try:
        job: FineTuningJob = yield from retrieve_plan(job_id)
        reporter.update(job)
        while not job.done:
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeoutError(f"{job_id} is still {job.status} after {timeout:g}s")
            yield Sleep(poll_interval)
            job = yield from retrieve_plan(job_id)
            reporter.update(job)
        return job
    finally:
        reporter.close()


def events_plan(job_id: str, *, order: Literal["asc", "desc"], follow: bool,
                after: str | None, poll_interval: float) -> Plan[None]:
    """Every event in ``order``; with ``follow``, keep polling (oldest first) until the job has
    ended and its last events are read. Each event is emitted exactly once: the cursor is the
    last event seen, and the server orders events by (created_at, id)."""
    if follow:
        order = "asc"
    cursor = after
    finished = False
    while True:
        page: CursorPage[FineTuningJobEvent] = yield Request(
            "GET", job_path(job_id, "/events"), cast=CursorPage[FineTuningJobEvent],
            params={"order": order, "after": cursor, "limit": EVENTS_PAGE})
        for event in page.data:
            yield Emit(event)
        if page.data:
            cursor = page.data[-1].id
        if page.has_more:
            continue
        if not follow or finished:
            return
        job: FineTuningJob = yield from retrieve_plan(job_id)
        if job.done:
            finished = True  # one more read drains what was written with the last status
            continue
        yield Sleep(poll_interval)


def download_checkpoint_plan(job_id: str, checkpoint_id: str, directory: Path) -> Plan[Path]:
    return (yield from extract_plan(
        job_path(job_id, f"/checkpoints/{segment(checkpoint_id)}/content"), directory))


def extract_plan(path: str, directory: Path) -> Plan[Path]:
    """Download a tar to a temporary file, then unpack it safely into ``directory``."""
    with tempfile.TemporaryDirectory(prefix="posttrain-download-") as tmp:
        archive = yield Request("GET", path, download_to=Path(tmp) / "archive.tar")
        safe_extract(archive, directory)
    return directory


class Jobs(Resource[SyncAPIClient]):
    def create(self, *, model: str, training_file: str, validation_file: str | None = None,
               method: Mapping[str, Any] | None = None,
               hyperparameters: Mapping[str, Any] | None = None, suffix: str | None = None,
               seed: int | None = None, metadata: Mapping[str, str] | None = None,
               pool: str | None = None, training_type: str | None = None,
               lora: Mapping[str, Any] | None = None, max_seq_length: int | None = None,
               eval_samples: int | None = None, extra_body: Mapping[str, Any] | None = None,
               idempotency_key: str | None = None) -> FineTuningJob:
        """Start a job. ``pool``, ``training_type``, ``lora``, ``max_seq_length`` and
        ``eval_samples`` are Posttrain's extensions; ``extra_body`` passes anything newer."""
        body = create_body(model=model, training_file=training_file,
                           validation_file=validation_file, method=method,
                           hyperparameters=hyperparameters, suffix=suffix, seed=seed,
                           metadata=metadata, pool=pool, training_type=training_type, lora=lora,
                           max_seq_length=max_seq_length, eval_samples=eval_samples,
                           extra_body=extra_body)
        return self._client._run(create_plan(body, idempotency_key))

    def estimate(self, *, model: str, training_file: str, validation_file: str | None = None,
                 method: Mapping[str, Any] | None = None,
                 hyperparameters: Mapping[str, Any] | None = None, seed: int | None = None,
                 pool: str | None = None, training_type: str | None = None,
                 lora: Mapping[str, Any] | None = None, max_seq_length: int | None = None,
                 eval_samples: int | None = None, extra_body: Mapping[str, Any] | None = None
                 ) -> JobEstimate:
        """What ``create`` with the same arguments would cost, on every enabled pool; nothing
        is written. Pass the returned ``seed`` to ``create`` so the bill's tokens match."""
        body = create_body(model=model, training_file=training_file,
                           validation_file=validation_file, method=method,
                           hyperparameters=hyperparameters, suffix=None, seed=seed,
                           metadata=None, pool=pool, training_type=training_type, lora=lora,
                           max_seq_length=max_seq_length, eval_samples=eval_samples,
                           extra_body=extra_body)
        return self._client._run(estimate_plan(body))

    def pause(self, job_id: str, *, idempotency_key: str | None = None) -> FineTuningJob:
        """Queued: ``paused`` at once; running: ``pausing``, then ``paused`` at its next step
        with a checkpoint."""
        return self._client._run(pause_plan(job_id, idempotency_key))

    def resume(self, job_id: str, *, max_cost: Decimal | str | None = None,
               clear_max_cost: bool = False, idempotency_key: str | None = None
               ) -> FineTuningJob:
        """Continue a paused job from its checkpoint; ``max_cost`` sets a new cap (USD)."""
        return self._client._run(resume_plan(job_id, resume_body(max_cost, clear_max_cost),
                                             idempotency_key))

    def list(self, *, limit: int | None = None, metadata: Mapping[str, str] | None = None
             ) -> SyncPager[FineTuningJob]:
        return SyncPager(self._client, list_plan(limit, metadata))

    def retrieve(self, job_id: str) -> FineTuningJob:
        return self._client._run(retrieve_plan(job_id))

    def cancel(self, job_id: str, *, idempotency_key: str | None = None) -> FineTuningJob:
        return self._client._run(cancel_plan(job_id, idempotency_key))

    def wait(self, job_id: str, *, progress: Progress = False, poll_interval: float = 1.0,
             timeout: float | None = None) -> FineTuningJob:
        """Block until the job is ``succeeded``, ``failed`` or ``cancelled``; return it.

        ``progress=True`` draws a live bar (step, loss, ETA, and the cost once billed) on
        stderr; a callable receives every polled job instead. A failed job is returned, not
        raised: look at ``job.status`` and ``job.error``.
        """
        return self._client._run(wait_plan(job_id, progress=progress,
                                           poll_interval=poll_interval, timeout=timeout))

    def events(self, job_id: str, *, follow: bool = False, order: Literal["asc", "desc"] = "asc",
               after: str | None = None, poll_interval: float = 1.0
               ) -> Iterator[FineTuningJobEvent]:
        """The job's events, oldest first by default; ``follow=True`` keeps yielding new ones
        until the job has ended."""
        return self._client._iterate(events_plan(job_id, order=order, follow=follow,
                                                 after=after, poll_interval=poll_interval))

    def checkpoints(self, job_id: str, *, limit: int | None = None
                    ) -> SyncPager[FineTuningJobCheckpoint]:
        return SyncPager(self._client, checkpoints_plan(job_id, limit))

    def download_checkpoint(self, job_id: str, checkpoint_id: str,
                            directory: str | Path) -> Path:
        """Unpack a checkpoint (weights + trainer state) into ``directory``."""
        return self._client._run(download_checkpoint_plan(job_id, checkpoint_id,
                                                          Path(directory)))


class AsyncJobs(Resource[AsyncAPIClient]):
    async def create(self, *, model: str, training_file: str,
                     validation_file: str | None = None,
                     method: Mapping[str, Any] | None = None,
                     hyperparameters: Mapping[str, Any] | None = None,
                     suffix: str | None = None, seed: int | None = None,
                     metadata: Mapping[str, str] | None = None, pool: str | None = None,
                     training_type: str | None = None, lora: Mapping[str, Any] | None = None,
                     max_seq_length: int | None = None, eval_samples: int | None = None,
                     extra_body: Mapping[str, Any] | None = None,
                     idempotency_key: str | None = None) -> FineTuningJob:
        body = create_body(model=model, training_file=training_file,
                           validation_file=validation_file, method=method,
                           hyperparameters=hyperparameters, suffix=suffix, seed=seed,
                           metadata=metadata, pool=pool, training_type=training_type, lora=lora,
                           max_seq_length=max_seq_length, eval_samples=eval_samples,
                           extra_body=extra_body)
        return await self._client._run(create_plan(body, idempotency_key))

    async def estimate(self, *, model: str, training_file: str,
                       validation_file: str | None = None,
                       method: Mapping[str, Any] | None = None,
                       hyperparameters: Mapping[str, Any] | None = None,
                       seed: int | None = None, pool: str | None = None,
                       training_type: str | None = None,
                       lora: Mapping[str, Any] | None = None,
                       max_seq_length: int | None = None, eval_samples: int | None = None,
                       extra_body: Mapping[str, Any] | None = None) -> JobEstimate:
        body = create_body(model=model, training_file=training_file,
                           validation_file=validation_file, method=method,
                           hyperparameters=hyperparameters, suffix=None, seed=seed,
                           metadata=None, pool=pool, training_type=training_type, lora=lora,
                           max_seq_length=max_seq_length, eval_samples=eval_samples,
                           extra_body=extra_body)
        return await self._client._run(estimate_plan(body))

    async def pause(self, job_id: str, *, idempotency_key: str | None = None) -> FineTuningJob:
        return await self._client._run(pause_plan(job_id, idempotency_key))

    async def resume(self, job_id: str, *, max_cost: Decimal | str | None = None,
                     clear_max_cost: bool = False, idempotency_key: str | None = None
                     ) -> FineTuningJob:
        return await self._client._run(resume_plan(
            job_id, resume_body(max_cost, clear_max_cost), idempotency_key))

    def list(self, *, limit: int | None = None, metadata: Mapping[str, str] | None = None
             ) -> AsyncPager[FineTuningJob]:
        return AsyncPager(self._client, list_plan(limit, metadata))

    async def retrieve(self, job_id: str) -> FineTuningJob:
        return await self._client._run(retrieve_plan(job_id))

    async def cancel(self, job_id: str, *, idempotency_key: str | None = None
                     ) -> FineTuningJob:
        return await self._client._run(cancel_plan(job_id, idempotency_key))

    async def wait(self, job_id: str, *, progress: Progress = False,
                   poll_interval: float = 1.0, timeout: float | None = None) -> FineTuningJob:
        return await self._client._run(wait_plan(job_id, progress=progress,
                                                 poll_interval=poll_interval, timeout=timeout))

    def events(self, job_id: str, *, follow: bool = False, order: Literal["asc", "desc"] = "asc",
               after: str | None = None, poll_interval: float = 1.0
               ) -> AsyncIterator[FineTuningJobEvent]:
        return self._client._iterate(events_plan(job_id, order=order, follow=follow,
                                                 after=after, poll_interval=poll_interval))

    def checkpoints(self, job_id: str, *, limit: int | None = None
                    ) -> AsyncPager[FineTuningJobCheckpoint]:
        return AsyncPager(self._client, checkpoints_plan(job_id, limit))

    async def download_checkpoint(self, job_id: str, checkpoint_id: str,
                                  directory: str | Path) -> Path:
        return await self._client._run(download_checkpoint_plan(job_id, checkpoint_id,
                                                                Path(directory)))


class Graders(Resource[SyncAPIClient]):
    """``client.fine_tuning.alpha.graders``: try a grader on one sample (OpenAI's alpha API)."""

    def run(self, *, grader: Mapping[str, Any], model_sample: str,
            item: Mapping[str, Any] | None = None) -> GraderRun:
        body = {"grader": grader, "model_sample": model_sample, "item": item or {}}
        return self._client._run(grader_run_plan(body))

    def validate(self, *, grader: Mapping[str, Any]) -> GraderValidation:
        return self._client._run(grader_validate_plan(grader))


class AsyncGraders(Resource[AsyncAPIClient]):
    async def run(self, *, grader: Mapping[str, Any], model_sample: str,
                  item: Mapping[str, Any] | None = None) -> GraderRun:
        body = {"grader": grader, "model_sample": model_sample, "item": item or {}}
        return await self._client._run(grader_run_plan(body))

    async def validate(self, *, grader: Mapping[str, Any]) -> GraderValidation:
        return await self._client._run(grader_validate_plan(grader))


class Alpha(Resource[SyncAPIClient]):
    def __init__(self, client: SyncAPIClient) -> None:
        super().__init__(client)
        self.graders = Graders(client)


class AsyncAlpha(Resource[AsyncAPIClient]):
    def __init__(self, client: AsyncAPIClient) -> None:
        super().__init__(client)
        self.graders = AsyncGraders(client)


class FineTuning(Resource[SyncAPIClient]):
    def __init__(self, client: SyncAPIClient) -> None:
        super().__init__(client)
        self.jobs = Jobs(client)
        self.alpha = Alpha(client)


class AsyncFineTuning(Resource[AsyncAPIClient]):
    def __init__(self, client: AsyncAPIClient) -> None:
        super().__init__(client)
        self.jobs = AsyncJobs(client)
        self.alpha = AsyncAlpha(client)
