"""The Kubernetes manifests, rendered offline and checked against the Kubernetes schemas and
the rules a GPU cluster operator relies on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.deploy.render import by_identity, render, render_kubectl, render_python

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = ["cpu", "blackwell", "rubin"]
GPU_POOLS = {"blackwell": "NVIDIA-B200", "rubin": "NVIDIA-Vera-Rubin"}
K8S_VERSION = "1.33.0"
# The longest a checkpoint may take on the way out (preStop waits up to 840 s of it).
CHECKPOINT_SECONDS = 840


def rendered(pool: str) -> list[dict[str, Any]]:
    return render(ROOT / "k8s" / "overlays" / pool)


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]["template"]["spec"] if doc["kind"] in {"Deployment", "Job"} else {}
    return spec.get("containers", [])


def worker(pool: str) -> dict[str, Any]:
    return by_identity(rendered(pool))[("Deployment", f"posttrain-worker-{pool}")]


@pytest.mark.parametrize("pool", OVERLAYS)
def test_every_rendered_manifest_is_valid_kubernetes(pool):
    documents = rendered(pool)
    kinds = {doc["kind"] for doc in documents}
    assert {"Deployment", "Service", "Ingress", "Job", "ConfigMap", "PodDisruptionBudget",
            "ScaledObject"} <= kinds
    for doc in documents:
        if doc["apiVersion"].startswith("keda.sh/"):
            continue  # a CRD: checked by the KEDA test below
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


@pytest.mark.parametrize("pool", OVERLAYS)
def test_the_python_renderer_agrees_with_kubectl(pool):
    folder = ROOT / "k8s" / "overlays" / pool
    from_kubectl = render_kubectl(folder)
    if from_kubectl is None:
        pytest.skip("kubectl is not installed; the Python renderer is used alone")
    assert by_identity(render_python(folder)) == by_identity(from_kubectl)


@pytest.mark.parametrize("pool", list(GPU_POOLS))
def test_a_gpu_worker_runs_only_on_its_pools_nodes(pool):
    spec = worker(pool)["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"key": "posttrain.dev/pool", "operator": "Equal",
                                    "value": pool, "effect": "NoSchedule"}]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expression = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expression == {"key": "nvidia.com/gpu.product", "operator": "In",
                          "values": [GPU_POOLS[pool]]}


@pytest.mark.parametrize("pool", OVERLAYS)
def test_gpus_are_asked_for_in_limits_only(pool):
    for doc in rendered(pool):
        for container in containers(doc):
            resources = container.get("resources", {})
            assert "nvidia.com/gpu" not in resources.get("requests", {}), doc["metadata"]
    gpus = worker(pool)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert ("nvidia.com/gpu" in gpus) == (pool in GPU_POOLS)


def test_rubin_trains_on_a_quarter_of_blackwells_gpus():
    def gpus(pool: str) -> int:
        spec = worker(pool)["spec"]["template"]["spec"]
        return spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]

    assert gpus("rubin") * 4 == gpus("blackwell")


@pytest.mark.parametrize("pool", OVERLAYS)
def test_long_running_containers_have_probes(pool):
    for doc in rendered(pool):
        if doc["kind"] != "Deployment":
            continue
        for container in containers(doc):
            assert "livenessProbe" in container, doc["metadata"]["name"]
            if doc["metadata"]["name"] == "posttrain-web":
                assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
                assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


@pytest.mark.parametrize("pool", OVERLAYS)
def test_workers_get_time_to_checkpoint_and_hand_the_job_back(pool):
    spec = worker(pool)["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] > CHECKPOINT_SECONDS
    pre_stop = spec["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[:3] == ["python", "-m", "workers.drain"]
    wait = float(pre_stop[pre_stop.index("--wait") + 1])
    assert wait <= CHECKPOINT_SECONDS < spec["terminationGracePeriodSeconds"]


@pytest.mark.parametrize("pool", OVERLAYS)
def test_images_are_pinned_by_tag(pool):
    for doc in rendered(pool):
        for container in containers(doc):
            image = container["image"]
            assert re.fullmatch(r"[\w./-]+:[\w.-]+", image), image
            assert not image.endswith(":latest")


SECRET_NAMES = re.compile(r"(PASSWORD|SECRET|TOKEN|KEY|DATABASE_URL|BROKER_URL)", re.I)


@pytest.mark.parametrize("pool", OVERLAYS)
def test_no_secret_values_are_in_the_manifests(pool):
    documents = rendered(pool)
    assert not [doc for doc in documents if doc["kind"] == "Secret"]
    for doc in documents:
        if doc["kind"] == "ConfigMap":
            assert not [key for key in doc["data"] if SECRET_NAMES.search(key)
                        and key != "POSTTRAIN_REQUIRE_SECRET_KEY"]
        for container in containers(doc):
            for variable in container.get("env", []):
                assert not (SECRET_NAMES.search(variable["name"]) and "value" in variable)


@pytest.mark.parametrize("pool", OVERLAYS)
def test_workers_hold_no_database_credentials(pool):
    env_from = worker(pool)["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert {"secretRef": {"name": "posttrain-worker-secrets"}} in env_from
    assert {"secretRef": {"name": "posttrain-secrets"}} not in env_from


@pytest.mark.parametrize("pool", OVERLAYS)
def test_keda_scales_each_pool_on_its_queue_and_its_running_jobs(pool):
    scaled = by_identity(rendered(pool))[("ScaledObject", f"posttrain-worker-{pool}")]
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"]["name"] == f"posttrain-worker-{pool}"
    triggers = {trigger["type"]: trigger["metadata"] for trigger in scaled["spec"]["triggers"]}
    assert triggers["redis"]["listName"] == f"train.{pool}"
    assert f'pool="{pool}"' in triggers["prometheus"]["query"]
    assert scaled["spec"]["maxReplicaCount"] >= scaled["spec"]["minReplicaCount"] >= 0
