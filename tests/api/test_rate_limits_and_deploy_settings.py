"""Per-key rate limits, and production settings that pass Django's deployment checks."""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def limited(settings):
    settings.RATE_LIMIT = "3/min"
    cache.clear()
    yield
    cache.clear()


def test_a_key_over_its_rate_gets_429_with_retry_after(alice, bob, limited):
    for _ in range(3):
        assert alice.client.get("/v1/files").status_code == 200
    response = alice.client.get("/v1/files")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert response.json()["error"]["type"] == "rate_limit_error"
    assert bob.client.get("/v1/files").status_code == 200  # limits are per key


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "POSTTRAIN_VAR_DIR": str(tmp_path),
           "POSTTRAIN_SECRET_KEY": secrets.token_urlsafe(50), "POSTTRAIN_HTTPS": "true",
           "POSTTRAIN_REQUIRE_SECRET_KEY": "true", "POSTTRAIN_ALLOWED_HOSTS": "api.example.com"}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level",
                             "WARNING"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "POSTTRAIN_VAR_DIR": str(tmp_path),
           "POSTTRAIN_REQUIRE_SECRET_KEY": "true"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "POSTTRAIN_SECRET_KEY must be set" in result.stderr
