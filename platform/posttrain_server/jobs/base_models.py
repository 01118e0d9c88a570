"""Which starting models a job may name, and where the worker will find them.

A job may start from: a built-in model (built locally by the worker, no hub), a folder path
on the workers' filesystem, a Hugging Face id already in the local cache (offline), or an
earlier job's result (``ft:...``) or checkpoint (``ft:...:ckpt-step-N``) of the same org.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from posttrain_server.api.errors import ApiError
from posttrain_server.jobs.naming import checkpoint_name, parse_checkpoint_name
from posttrain_server.tenancy.models import Organization
from workers.contract import ModelRef


@dataclass(frozen=True)
class BaseModel:
    name: str
    size_class: str
    description: str
    # Base learning rates, multiplied by the job's learning_rate_multiplier.
    lora_learning_rate: float
    full_learning_rate: float


BUILTIN_MODELS: dict[str, BaseModel] = {
    "posttrain-tiny": BaseModel(
        name="posttrain-tiny", size_class="tiny",
        description="~0.8M-parameter Qwen2-style chat model built locally (demo and tests)",
        lora_learning_rate=2e-3, full_learning_rate=2e-3,
    ),
}

DEFAULT_LORA_LR = 2e-4
DEFAULT_FULL_LR = 2e-5


@dataclass(frozen=True)
class ResolvedModel:
    ref: ModelRef
    size_class: str
    lora_learning_rate: float
    full_learning_rate: float
    root_name: str  # the base model a chain started from, for fine_tuned_model names
    parent_job: str | None = None  # the job that made a fine-tuned starting model


def _hf_cached(model_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # the slim web image has no hub client
        return False
    found = try_to_load_from_cache(model_id, "config.json")
    return isinstance(found, str)


def resolve_model(*, organization: Organization, name: str) -> ResolvedModel:
    if name in BUILTIN_MODELS:
        base = BUILTIN_MODELS[name]
        return ResolvedModel(ModelRef(kind="builtin", ref=name), base.size_class,
                             base.lora_learning_rate, base.full_learning_rate, name)
    if name.startswith("ft:"):
        return _resolve_fine_tuned(organization=organization, name=name)
    if os.path.isabs(name):
        if not (Path(name) / "config.json").is_file():
            raise ApiError(f"Model folder {name!r} does not exist or has no config.json",
                           param="model", code="model_not_found")
        return ResolvedModel(ModelRef(kind="path", ref=name), "small", DEFAULT_LORA_LR,
                             DEFAULT_FULL_LR, Path(name).name)
    if "/" in name and _hf_cached(name):
        return ResolvedModel(ModelRef(kind="hf", ref=name), "small", DEFAULT_LORA_LR,
                             DEFAULT_FULL_LR, name.split("/")[-1])
    raise ApiError(
        f"The model {name!r} does not exist: use a built-in model "
        f"({', '.join(BUILTIN_MODELS)}), a fine-tuned model of your organization, an absolute "
        "folder path, or a Hugging Face id present in the local cache (no hub is contacted).",
        param="model", code="model_not_found",
    )


def _resolve_fine_tuned(*, organization: Organization, name: str) -> ResolvedModel:
    from posttrain_server.jobs.models import Checkpoint, FineTuningJob

    job = FineTuningJob.objects.filter(organization=organization, fine_tuned_model=name).first()
    storage_key = job.adapter_key if job else ""
    parsed = parse_checkpoint_name(name) if job is None else None
    if parsed is not None:
        short_id, step = parsed
        job = FineTuningJob.objects.filter(organization=organization,
                                           id__startswith=f"ftjob-{short_id}").first()
        checkpoint = Checkpoint.objects.filter(job=job, step=step).first() if job else None
        storage_key = checkpoint.storage_key if checkpoint else ""
        if job is not None and checkpoint_name(job, step) != name:
            job = None
    if job is None or not storage_key:
        raise ApiError(f"The model {name!r} does not exist", param="model",
                       code="model_not_found")
    parent = ModelRef.model_validate(job.base_model)
    base = parent if job.training["type"] == "lora" else None
    training = job.training
    return ResolvedModel(
        ModelRef(kind="storage", ref=storage_key, base=base), job.size_class,
        training.get("base_lora_learning_rate", DEFAULT_LORA_LR),
        training.get("base_full_learning_rate", DEFAULT_FULL_LR),
        training.get("root_model", job.model),
        parent_job=job.id,
    )
