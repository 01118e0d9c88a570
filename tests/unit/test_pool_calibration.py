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


def measured(job, tokens: int, wall: str, train: str, eval_tokens: int, evals: str,
             quoted_eval_tokens: int | None = None) -> None:
    FineTuningJob.objects.filter(id=job.id).update(
        status="succeeded", trained_tokens=tokens, device_seconds=Decimal(wall),
        train_seconds=Decimal(train), eval_tokens=eval_tokens, eval_seconds=Decimal(evals),
        training={**job.training, "quoted_eval_tokens": quoted_eval_tokens})


def test_jobs_that_report_their_phases_give_the_figures_directly(alice, make_job):
    # Each: 6 s start-up + tokens at 8000/s + eval tokens at 2000/s; the totals alone would put
    # the evals' time (same for every job) into the start-up.
    measured(make_job(alice.organization), 16_000, "11", "2", 6_000, "3")
    measured(make_job(alice.organization), 64_000, "17", "8", 6_000, "3")
    measured(make_job(alice.organization), 160_000, "30", "20", 8_000, "4")

    result = pool_calibrate(pool_name="cpu", size_class="tiny")

    assert result.method == "phases"
    assert result.throughput == pytest.approx(8000)
    assert result.eval_throughput == pytest.approx(2000)
    assert result.startup_seconds == pytest.approx(6)
    pool = Pool.objects.get(name="cpu")
    assert pool.eval_throughput["tiny"] == pytest.approx(2000)
    assert float(pool.startup_seconds) == pytest.approx(6)


def test_an_estimate_times_the_evals_at_the_pools_eval_throughput(alice, make_job):
    from posttrain_server.billing.prices import DEFAULT_RATES
    from posttrain_server.billing.quotes import pool_quote

    pool = Pool.objects.get(name="cpu")
    pool.throughput, pool.eval_throughput = {"tiny": 8000}, {"tiny": 2000}
    pool.startup_seconds = Decimal(6)

    quote = pool_quote(pool=pool, method="supervised", size_class="tiny", tokens=80_000,
                       rates=DEFAULT_RATES, eval_tokens=10_000)

    assert quote.wall_seconds == Decimal("21.000")  # 6 + 80k/8k + 10k/2k
    assert quote.gpu_seconds == Decimal("21.000")


def test_eval_throughput_is_measured_in_the_quotes_units(alice, make_job):
    # Quoted 12,000 eval tokens (every answer at its budget), 9,000 metered, 3 s of evals: an
    # estimate that quotes the bound must time it at 4,000 bound-tokens/s to be unbiased.
    measured(make_job(alice.organization), 16_000, "11", "2", 9_000, "3",
             quoted_eval_tokens=12_000)

    assert pool_calibrate(pool_name="cpu", size_class="tiny").eval_throughput == 4000


def test_only_supervised_jobs_measure_the_training_throughput(alice, make_job):
    # An RL job's trained tokens are what it generated: 1,000 tokens in 60 s would say
    # ~18 tokens/s. It is not a sample of the rate the pool trains at.
    finished(make_job(alice.organization), 50_000, "14")
    finished(make_job(alice.organization), 150_000, "34")
    rl = make_job(alice.organization)
    FineTuningJob.objects.filter(id=rl.id).update(method={**rl.method, "type": "reinforcement"})
    finished(rl, 1_000, "60")

    result = pool_calibrate(pool_name="cpu", size_class="tiny")

    assert result.jobs == 2
    assert result.throughput == pytest.approx(5000, rel=1e-6)
