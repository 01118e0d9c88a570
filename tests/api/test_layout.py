"""Repository layout: ``platform/`` never shadows the standard library, workers need no Django.

Each check runs in a fresh interpreter (``subprocess``), so what this pytest process already
imported cannot hide a problem.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# The folders that are on sys.path in some entry point: manage.py and wsgi (root, platform/),
# pytest (root, platform/, scripts/).
PATH_ENTRIES = [ROOT, ROOT / "platform", ROOT / "scripts"]
DEPENDENCY_NAMES = ["platform", "datasets", "trl", "peft", "celery", "torch", "transformers",
                    "django", "kombu", "pydantic", "httpx", "rest_framework", "accelerate"]


def run_python(code: str, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
               ) -> str:
    result = subprocess.run([PYTHON, *args, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env=env or os.environ.copy(), check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def env_without_django_settings() -> dict[str, str]:
    """The environment of a training worker: no DJANGO_SETTINGS_MODULE (pytest sets one)."""
    env = os.environ.copy()
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["PYTHONPATH"] = str(ROOT)
    return env


def worker_modules() -> list[str]:
    modules = []
    for path in sorted((ROOT / "workers").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules.append(".".join(parts))
    return modules


def test_platform_imported_by_manage_py_is_the_standard_library():
    result = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c",
         "import json, platform; print(json.dumps([platform.__file__, "
         "callable(getattr(platform, 'system', None)), platform.system()]))"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)

    assert result.returncode == 0, result.stderr[-3000:]
    location, has_system, system = json.loads(result.stdout.strip().splitlines()[-1])
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    assert Path(location).resolve().is_relative_to(stdlib)
    assert not Path(location).resolve().is_relative_to(ROOT)
    assert has_system is True
    assert system


def test_platform_imported_from_the_repository_root_is_the_standard_library():
    code = ("import sys; sys.path[:0] = [{}]; import platform; "
            "print(platform.__file__); print(platform.python_version())").format(
                ", ".join(repr(str(entry)) for entry in PATH_ENTRIES))

    location, version = run_python(code).split()

    assert Path(location).resolve().is_relative_to(Path(sysconfig.get_paths()["stdlib"]))
    assert version == ".".join(map(str, sys.version_info[:3]))


def test_the_platform_folder_is_not_a_package():
    assert (ROOT / "platform").is_dir()
    assert not (ROOT / "platform" / "__init__.py").exists()
    assert (ROOT / "platform" / "posttrain_server" / "__init__.py").is_file()


def test_importing_the_workers_never_needs_django():
    """Workers run where Django is not installed: make it unimportable and import them all."""
    code = """
import importlib, json, sys
from importlib.abc import MetaPathFinder

class NoPlatform(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"django", "posttrain_server", "rest_framework"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoPlatform())
results = {}
for module in sys.argv[1:]:
    try:
        importlib.import_module(module)
        results[module] = "ok"
    except ModuleNotFoundError as exc:
        results[module] = f"missing:{exc.name}"
    except Exception as exc:
        results[module] = f"error:{type(exc).__name__}: {exc}"
print(json.dumps(results))
"""
    modules = worker_modules()
    result = subprocess.run([PYTHON, "-c", code, *modules], cwd=ROOT, capture_output=True,
                            text=True, timeout=120, env=env_without_django_settings(),
                            check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(result.stdout.strip().splitlines()[-1])

    assert set(results) == set(modules)
    assert "workers.contract" in results and "workers.celery_app" in results
    for module, outcome in results.items():
        # A heavy optional dependency (torch) may be absent from a slim environment; Django
        # or the platform's own package never may be needed.
        if outcome.startswith("missing:"):
            assert outcome.split(":", 1)[1].split(".")[0] not in {
                "django", "posttrain_server", "rest_framework", "workers"}, (module, outcome)
        else:
            assert outcome == "ok", (module, outcome)
    for core in ("workers.contract", "workers.runner", "workers.storage",
                 "workers.dataset_rules", "workers.celery_app", "workers.model_store",
                 "workers.env"):
        assert results[core] == "ok", (core, results[core])


def test_the_workers_core_modules_import_no_django_at_all():
    output = run_python(
        "import workers.contract, workers.runner, workers.storage, workers.dataset_rules, "
        "workers.model_store, workers.env, workers.celery_config; import sys; "
        "print('django' in sys.modules, 'posttrain_server' in sys.modules)",
        env=env_without_django_settings())

    assert output.split() == ["False", "False"]


def test_the_workers_celery_app_loads_no_django_configuration():
    # kombu probes for ``django.utils.functional`` when Django happens to be installed; what
    # must never load is Django's settings, apps or ORM, or the platform itself.
    output = run_python(
        "import workers.celery_app as w, sys; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'posttrain_server' or "
        "m in ('django.conf', 'django.db', 'django.apps', 'django.setup'))); "
        "print(sum(f is not None for f in w.app._fixups))",
        env=env_without_django_settings())

    loaded, fixups = output.strip().splitlines()
    assert loaded == "[]"
    assert fixups == "0"


def test_the_workers_celery_app_ignores_a_django_settings_variable():
    env = env_without_django_settings()
    env["DJANGO_SETTINGS_MODULE"] = "posttrain_server.settings"

    output = run_python(
        "import workers.celery_app as w, sys; "
        "print(sum(f is not None for f in w.app._fixups), 'django.conf' in sys.modules)", env=env)

    assert output.split() == ["0", "False"]


def _top_level_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for entry in PATH_ENTRIES:
        for item in entry.iterdir():
            if item.name.startswith((".", "_")):
                continue
            if item.is_dir() or item.suffix == ".py":
                names.setdefault(item.stem if item.suffix == ".py" else item.name, item)
    return names


def test_no_top_level_module_of_the_repository_shadows_the_stdlib_or_a_dependency():
    taken = set(sys.stdlib_module_names) | set(importlib.metadata.packages_distributions())
    names = _top_level_names()
    assert "workers" in names and "posttrain_server" in names

    for name, item in names.items():
        if name not in taken:
            continue
        # A colliding name is only allowed as a plain folder (never a package or a module),
        # which loses to the real module: platform/ is such a folder.
        assert item.is_dir(), f"{item} shadows the module {name!r}"
        assert not (item / "__init__.py").exists(), f"{item} shadows the module {name!r}"


def test_dependency_names_resolve_outside_the_repository():
    collisions = [name for name in _top_level_names()
                  if name in set(sys.stdlib_module_names)
                  | set(importlib.metadata.packages_distributions())]
    names = sorted(set(DEPENDENCY_NAMES) | set(collisions))
    entries = [str(entry) for entry in PATH_ENTRIES]
    code = f"""
import importlib.util, json, sys
sys.path[:0] = {entries!r}
found = {{}}
for name in {names!r}:
    spec = importlib.util.find_spec(name)
    if spec is None:
        found[name] = []
    else:
        found[name] = [spec.origin or ""] + list(spec.submodule_search_locations or [])
print(json.dumps(found))
"""

    found = json.loads(run_python(code, env=env_without_django_settings()).splitlines()[-1])

    assert found["platform"], "the standard library's platform must be importable"
    for name, locations in found.items():
        for location in locations:
            if location in ("", "built-in", "frozen"):
                continue
            assert not Path(location).resolve().is_relative_to(ROOT / "platform"), (name,
                                                                                    location)
            assert not (Path(location).resolve().is_relative_to(ROOT)
                        and not Path(location).resolve().is_relative_to(ROOT / ".venv")), (
                name, location)
