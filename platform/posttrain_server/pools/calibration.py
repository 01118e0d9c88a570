"""Calibrate a pool's estimate figures from jobs it really ran.

Each finished single-attempt job of a size class gives one measurement: its trained tokens
and its billed wall-clock (GPU-seconds / GPUs). Estimates model the wall-clock as
``startup_seconds + tokens / (throughput x GPUs)``; a least-squares line through the
measurements gives both figures (with a single distinct job size only the throughput is
fitted, the startup is kept). This measures what the bill counts (evals, model load and
uploads included), which is what an estimate must predict.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count

from posttrain_server.pools.models import Pool


@dataclass(frozen=True)
class Calibration:
    pool: str
    size_class: str
    jobs: int
    throughput: float  # tokens per second per GPU
    startup_seconds: float
    previous_throughput: float
    previous_startup_seconds: float


def _samples(pool: Pool, size_class: str, limit: int) -> list[tuple[float, float]]:
    from posttrain_server.jobs.models import FineTuningJob

    jobs = (FineTuningJob.objects.filter(pool=pool.name, size_class=size_class,
                                         status="succeeded", trained_tokens__gt=0)
            .annotate(n_attempts=Count("attempts")).filter(n_attempts=1)
            .order_by("-finished_at")[:limit])
    return [(float(job.trained_tokens),
             float(job.device_seconds) / max(1, int(job.training.get("gpus", 1))))
            for job in jobs]


def pool_calibrate(*, pool_name: str, size_class: str, limit: int = 50,
                   save: bool = True) -> Calibration:
    pool = Pool.objects.get(name=pool_name)
    samples = _samples(pool, size_class, limit)
    if not samples:
        raise ValueError(f"no finished single-attempt {size_class} job on pool {pool_name} "
                         "to measure; run some first")
    gpus = pool.gpus_for(size_class)
    startup = float(pool.startup_seconds)
    tokens = [t for t, _ in samples]
    seconds = [s for _, s in samples]
    if len(set(tokens)) >= 2:
        n = len(samples)
        mean_t, mean_s = sum(tokens) / n, sum(seconds) / n
        slope = (sum((t - mean_t) * (s - mean_s) for t, s in samples)
                 / sum((t - mean_t) ** 2 for t in tokens))
        fitted_startup = mean_s - slope * mean_t
        if slope > 0 and fitted_startup >= 0:
            startup = fitted_startup
        else:  # noisy runs: keep the startup, fit the rate only
            slope = sum(s - startup for s in seconds) / sum(tokens)
    else:
        slope = sum(s - startup for s in seconds) / sum(tokens)
    throughput = 1.0 / (slope * gpus) if slope > 0 else pool.throughput_for(size_class)
    result = Calibration(pool=pool_name, size_class=size_class, jobs=len(samples),
                         throughput=round(throughput, 1), startup_seconds=round(startup, 3),
                         previous_throughput=pool.throughput_for(size_class),
                         previous_startup_seconds=float(pool.startup_seconds))
    if save:
        pool.throughput = {**pool.throughput, size_class: result.throughput}
        pool.startup_seconds = Decimal(str(result.startup_seconds))
        pool.save(update_fields=["throughput", "startup_seconds"])
    return result
