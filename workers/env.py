"""Typed readers for environment variables, shared by the platform's settings and the workers.

Each helper reads a variable once and refuses a malformed value at start-up, so a typo in a
deployment fails loudly instead of silently running with a default. ``NAME_FILE`` is honoured
for every variable so secrets can come from mounted files (Docker/Kubernetes secrets).
"""

from __future__ import annotations

import os
from pathlib import Path


class ConfigError(ValueError):
    """A configuration variable holds a value we refuse to guess about."""


def _raw(name: str) -> str | None:
    file_path = os.environ.get(f"{name}_FILE")
    if file_path:
        return Path(file_path).read_text(encoding="utf-8").strip()
    return os.environ.get(name)


def env_str(name: str, default: str) -> str:
    value = _raw(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={value!r} is not a boolean (use true/false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError as exc:
        raise ConfigError(f"{name}={value!r} is not an integer") from exc
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name}={number} is below the minimum {minimum}")
    return number


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError as exc:
        raise ConfigError(f"{name}={value!r} is not a number") from exc
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name}={number} is below the minimum {minimum}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None or value == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def repo_root() -> Path:
    """The checkout's root: defaults for local state live under it, in ``var/``."""
    return Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    return Path(env_str("POSTTRAIN_VAR_DIR", str(repo_root() / "var"))).resolve()


def storage_root() -> Path:
    return Path(env_str("POSTTRAIN_STORAGE_ROOT", str(var_dir() / "storage"))).resolve()


def models_root() -> Path:
    """Where built-in base models are built and cached (never downloaded)."""
    return Path(env_str("POSTTRAIN_MODELS_ROOT", str(var_dir() / "models"))).resolve()


def broker_url() -> str:
    return env_str("CELERY_BROKER_URL", "filesystem://")
