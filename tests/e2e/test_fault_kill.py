"""Issue 8's fault script, run three times: SIGKILL training workers at 20 random steps.

The script (``scripts/fault_kill.py``) asserts every invariant itself and exits non-zero on
a violation; it starts its own stack on this test's database and on a broker of its own (a
private redis-server, or the filesystem transport in its own folder), so the session's stack
never takes its jobs. The first run also drives a job that kills its worker at every claim
into ``failed`` through the attempt cap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import PrivateRedis, database_url

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


# Issue 8 asks CI for three runs (~4 min each on 2 cores); fewer where time is short.
RUNS = int(os.environ.get("POSTTRAIN_FAULT_RUNS", "3"))


@pytest.mark.parametrize("run", range(1, RUNS + 1))
def test_twenty_kills_at_random_steps_lose_nothing_and_bill_nothing_twice(
        run: int, transactional_db: None, tmp_path: Path) -> None:
    from django.conf import settings

    env = {**os.environ, "DATABASE_URL": database_url(settings.DATABASES["default"])}
    redis = None
    if shutil.which("redis-server"):
        redis = PrivateRedis(tmp_path)
        redis.start()
        env["CELERY_BROKER_URL"] = redis.url
    else:
        env.pop("CELERY_BROKER_URL", None)  # the filesystem transport, in the script's folder
    command = [sys.executable, str(ROOT / "scripts" / "fault_kill.py"), "--kills", "20",
               "--jobs", "4", "--workers", "3", "--seed", str(run), "--timeout", "500",
               "--var-dir", str(tmp_path / "var"), *(["--cap-job"] if run == 1 else [])]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True,  # noqa: S603
                                timeout=580, cwd=ROOT)
    finally:
        if redis is not None:
            redis.kill()
    print(result.stdout)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "all invariants held" in result.stdout
