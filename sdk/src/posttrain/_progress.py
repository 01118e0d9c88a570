"""The live line of ``jobs.wait(job_id, progress=True)``: status, step, loss, ETA, cost.

Drawn with rich when it is installed (``pip install 'posttrain[cli]'``), else as a plain line
on stderr, so the library itself needs nothing beyond httpx and pydantic. ``progress`` may also
be any callable, which then receives every polled job object.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

from posttrain.types import FineTuningJob


class ProgressReporter(Protocol):
    def update(self, job: FineTuningJob) -> None: ...

    def close(self) -> None: ...


def describe(job: FineTuningJob) -> dict[str, str]:
    """The figures a progress display shows, formatted once for every renderer."""
    progress = job.progress
    step = progress.step if progress and progress.step is not None else None
    total = progress.total_steps if progress and progress.total_steps else None
    loss = progress.train_loss if progress else None
    eta = ""
    if job.estimated_finish and not job.done:
        eta = _duration(max(0, job.estimated_finish - time.time()))
    cost = f"${job.cost.total}" if job.cost is not None else ""
    return {"status": job.status, "step": "" if step is None else str(step),
            "total": "" if total is None else str(total),
            "loss": "" if loss is None else f"{loss:.4f}", "eta": eta, "cost": cost}


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class CallbackReporter:
    def __init__(self, callback: Callable[[FineTuningJob], Any]) -> None:
        self.callback = callback

    def update(self, job: FineTuningJob) -> None:
        self.callback(job)

    def close(self) -> None:
        pass


class TextReporter:
    """One line per change on stderr, for terminals without rich (and for logs)."""

    def __init__(self) -> None:
        self.last = ""

    def update(self, job: FineTuningJob) -> None:
        fields = describe(job)
        line = f"{job.id} {fields['status']}"
        if fields["total"]:
            line += f" step {fields['step']}/{fields['total']}"
        if fields["loss"]:
            line += f" loss {fields['loss']}"
        if fields["eta"]:
            line += f" eta {fields['eta']}"
        if job.done and fields["cost"]:
            line += f" cost {fields['cost']}"
        if line != self.last:
            print(line, file=sys.stderr, flush=True)
            self.last = line

    def close(self) -> None:
        pass


class RichReporter:
    """A rich progress bar on stderr, so stdout stays clean for ``--json`` output."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"), TextColumn("eta {task.fields[eta]}"),
            TextColumn("cost {task.fields[cost]}"),
            console=Console(stderr=True), transient=False)
        self.task: Any = None
        self.progress.start()

    def update(self, job: FineTuningJob) -> None:
        fields = describe(job)
        total = int(fields["total"]) if fields["total"] else None
        step = int(fields["step"]) if fields["step"] else 0
        description = f"{fields['status']:<9}"  # the CLI prints the job id above the bar
        loss, eta = fields["loss"] or "-", fields["eta"] or "-"
        cost = fields["cost"] if job.done else "-"
        if self.task is None:
            self.task = self.progress.add_task(description, total=total, completed=step,
                                               loss=loss, eta=eta, cost=cost)
        else:
            if job.status == "succeeded" and total:
                step = total
            self.progress.update(self.task, description=description, total=total,
                                 completed=step, loss=loss, eta=eta, cost=cost)

    def close(self) -> None:
        self.progress.stop()


class NullReporter:
    def update(self, job: FineTuningJob) -> None:
        pass

    def close(self) -> None:
        pass


def make_reporter(progress: bool | Callable[[FineTuningJob], Any]) -> ProgressReporter:
    if callable(progress):
        return CallbackReporter(progress)
    if not progress:
        return NullReporter()
    try:
        return RichReporter()
    except ImportError:
        return TextReporter()
