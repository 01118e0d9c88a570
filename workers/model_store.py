"""Turning a ``ModelRef`` into folders on this worker: base weights plus adapters to merge.

Nothing is downloaded from a hub: built-in models are built locally, Hugging Face ids load from
the local cache only (``HF_HUB_OFFLINE``), earlier results come from our own object storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workers import env
from workers.contract import ModelRef
from workers.storage import Storage

BUILTIN = {"posttrain-tiny"}


class ModelUnavailable(Exception):
    """The starting model cannot be found on this worker; the job fails with this message."""


@dataclass
class ModelSource:
    model_dir: Path
    adapter_dirs: list[Path] = field(default_factory=list)  # merged in order before training


def materialize(ref: ModelRef, workdir: Path, storage: Storage) -> ModelSource:
    if ref.kind == "builtin":
        if ref.ref not in BUILTIN:
            raise ModelUnavailable(f"unknown built-in model {ref.ref!r}")
        from workers.tinymodel import build_tiny_model

        return ModelSource(build_tiny_model(env.models_root() / ref.ref))
    if ref.kind == "path":
        path = Path(ref.ref)
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"model folder {path} is missing on worker")
        return ModelSource(path)
    if ref.kind == "hf":
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            return ModelSource(Path(snapshot_download(ref.ref, local_files_only=True)))
        except LocalEntryNotFoundError as exc:
            raise ModelUnavailable(f"{ref.ref} is not in this worker's Hugging Face cache "
                                   "(no hub is contacted)") from exc
    target = workdir / "start" / ref.ref.replace("/", "_")
    if not target.exists():
        storage.download_dir(ref.ref, target)
    if (target / "adapter_config.json").is_file():
        if ref.base is None:
            raise ModelUnavailable(f"adapter {ref.ref} has no base model")
        base = materialize(ref.base, workdir, storage)
        return ModelSource(base.model_dir, [*base.adapter_dirs, target])
    return ModelSource(target)
