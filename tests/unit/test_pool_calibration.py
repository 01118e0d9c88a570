"""Calibrating a pool's throughput and startup from the jobs it really ran."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.pools.calibration import pool_calibrate
from posttrain_server.pools.models import Pool


def finished(job, tokens: int, seconds: str) -> None:
    FineTuningJob.objects.filter(id=job.id).update(status="succeeded", trained_tokens=tokens,
                                                   device_seconds=Decimal(seconds))


def test_two_job_sizes_give_both_the_throughput_and_the_startup(alice, make_job):
    # wall = 4 s + tokens / 5000 tokens/s
    finished(make_job(alice.organization), 50_000, "14")
    finished(make_job(alice.organization), 150_000, "34")

    result = pool_calibrate(pool_name="cpu", size_class="tiny")

    assert result.jobs == 2
    assert result.throughput == pytest.approx(5000, rel=1e-6)
    assert result.startup_seconds == pytest.approx(4, abs=1e-3)
    pool = Pool.objects.get(name="cpu")
    assert pool.throughput["tiny"] == pytest.approx(5000, rel=1e-6)
    assert pool.throughput["small"] == 150  # other size classes untouched


def test_the_command_reports_and_a_pool_without_jobs_is_a_clear_error(alice, make_job):
    with pytest.raises(CommandError, match="no finished single-attempt tiny job"):
        call_command("calibrate_pool", "cpu")
    finished(make_job(alice.organization), 90_000, "23")  # (23 - 5 s startup) -> 5000 t/s
    out = StringIO()

    call_command("calibrate_pool", "cpu", "--dry-run", stdout=out)

    assert "(not saved)" in out.getvalue() and "-> 5000 tokens/s" in out.getvalue()
    assert Pool.objects.get(name="cpu").throughput["tiny"] == 9000
