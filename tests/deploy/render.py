"""Render kustomizations offline: ``kubectl kustomize`` when installed, else a Python renderer
for the subset our manifests use (resources as files or folders, ``namespace``).

Both are tried where kubectl exists and must agree, so the fallback cannot drift silently.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PriorityClass", "StorageClass"}
SUPPORTED_KEYS = {"apiVersion", "kind", "resources", "namespace"}


def render_python(folder: Path) -> list[dict[str, Any]]:
    spec = yaml.safe_load((folder / "kustomization.yaml").read_text())
    unsupported = set(spec) - SUPPORTED_KEYS
    if unsupported:
        raise ValueError(f"{folder}: the Python renderer does not support {sorted(unsupported)}")
    documents: list[dict[str, Any]] = []
    for entry in spec.get("resources", []):
        path = (folder / entry).resolve()
        if path.is_dir():
            documents += render_python(path)
        else:
            documents += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    namespace = spec.get("namespace")
    if namespace:
        for doc in documents:
            if doc["kind"] not in CLUSTER_SCOPED:
                doc.setdefault("metadata", {})["namespace"] = namespace
    return documents


def render_kubectl(folder: Path) -> list[dict[str, Any]] | None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    out = subprocess.run([kubectl, "kustomize", str(folder)], check=True, capture_output=True,
                         text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def render(folder: Path) -> list[dict[str, Any]]:
    return render_kubectl(folder) or render_python(folder)


def by_identity(documents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in documents}
