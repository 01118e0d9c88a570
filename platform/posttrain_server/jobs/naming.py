"""Names of fine-tuned models and checkpoints, in OpenAI's ``ft:`` form.

``ft:<base>:<org>:<suffix>:<job short id>`` and ``...:ckpt-step-<N>`` for checkpoints. The short
id is the job id's first 12 random characters, which is how a name finds its job again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from posttrain_server.jobs.models import FineTuningJob

SHORT_ID_CHARS = 12
CHECKPOINT_MARK = ":ckpt-step-"


def fine_tuned_model_name(job: FineTuningJob) -> str:
    root = job.training.get("root_model", job.model)
    org = job.organization.name.lower().replace(" ", "-").replace(":", "-")[:40]
    short = job.id.removeprefix("ftjob-")[:SHORT_ID_CHARS]
    return ":".join(["ft", root, org, job.suffix or "", short])


def checkpoint_name(job: FineTuningJob, step: int) -> str:
    return f"{fine_tuned_model_name(job)}{CHECKPOINT_MARK}{step}"


def parse_checkpoint_name(name: str) -> tuple[str, int] | None:
    """(job short id, step) of a checkpoint name, or None if it is not one."""
    model_name, mark, step = name.rpartition(CHECKPOINT_MARK)
    if not mark or not step.isdigit():
        return None
    return model_name.rsplit(":", 1)[-1], int(step)
