"""docker-compose.yml against the Compose specification, and the promises the README makes."""

from __future__ import annotations

import json
from pathlib import Path

import check_jsonschema
import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = (Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor"
          / "compose-spec.json")


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_the_compose_file_follows_the_compose_specification():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(compose(), schema)


def test_every_long_running_service_has_a_healthcheck():
    for name, service in compose()["services"].items():
        if service.get("restart") == "no":
            continue  # one-shot: migrate, minio-init
        assert "healthcheck" in service, name


def test_the_platform_waits_for_migrations_and_its_dependencies():
    services = compose()["services"]
    for name in ("web", "platform-worker", "beat"):
        needs = services[name]["depends_on"]
        assert needs["migrate"] == {"condition": "service_completed_successfully"}
        assert needs["postgres"] == {"condition": "service_healthy"}
        assert needs["redis"] == {"condition": "service_healthy"}


def test_gpu_workers_are_behind_profiles_and_reserve_gpus():
    services = compose()["services"]
    for pool in ("blackwell", "rubin"):
        service = services[f"worker-{pool}"]
        assert service["profiles"] == [pool]
        assert service["environment"]["POSTTRAIN_POOL"] == pool
        devices = service["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["capabilities"] == ["gpu"]
    assert "profiles" not in services["worker-cpu"]


def test_workers_get_no_database_url_and_two_images_split_torch_from_web():
    services = compose()["services"]
    for name, service in services.items():
        if name.startswith("worker-"):
            assert "DATABASE_URL" not in service.get("environment", {})
            assert "posttrain-worker" in service["image"]
    assert services["web"]["image"].startswith("ghcr.io/posttrain/posttrain-web:")
    for name in ("requirements-web.txt", "requirements-common.txt"):
        pins = [line for line in (ROOT / name).read_text().splitlines()
                if line and not line.startswith("#")]
        assert not [pin for pin in pins if pin.split("==")[0] in {"torch", "trl", "peft"}]


def test_the_example_environment_lists_every_setting_the_readme_documents():
    readme = (ROOT / "README.md").read_text()
    example = (ROOT / ".env.example").read_text()
    documented = {line.split("`")[1] for line in readme.splitlines()
                  if line.startswith("| `POSTTRAIN_")}
    client_side = {"POSTTRAIN_TEST_OUTPUT", "POSTTRAIN_API_KEY", "POSTTRAIN_BASE_URL",
                   "POSTTRAIN_CHROMIUM"}
    missing = {name for name in documented - client_side if name not in example}
    assert not missing, f".env.example lacks {sorted(missing)}"
