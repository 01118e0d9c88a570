"""Calibrate a pool's estimate figures from jobs it really ran.

Estimates model a job's wall-clock as ``startup_seconds + trained tokens / (throughput x
GPUs) + eval tokens / eval throughput`` (``billing.quotes``). Each finished single-attempt
job of a size class is one measurement: its trained tokens, its eval tokens and its billed
wall-clock (GPU-seconds / GPUs), and, from workers that report them, the seconds of its
training loop and of its evals.

When every job reports its phases, the figures are read off directly: training throughput =
all trained tokens / all training seconds, eval throughput = all eval tokens / all eval
seconds, start-up = the median of what is left (wall - training - evals: process start, model
load, saves, upload). Phase times are measured inside one job, so they do not depend on
regressing a few noisy totals against each other; a least-squares fit of the totals put the
start-up in the slope and missed the largest job of the benchmark by 11%. Jobs without phase
times (older workers) fall back to that least-squares line through (tokens, wall - evals).
This measures what the bill counts, which is what an estimate must predict.

Eval throughput is measured in the estimate's own units: the eval tokens the job was quoted
(the bound: every answer at its full budget) per eval second, so an estimate that prices
evals at the bound also times them without bias (jobs quoted before: their metered tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from statistics import median

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
    eval_throughput: float | None = None  # eval tokens per second (None: not measured)
    previous_eval_throughput: float | None = None
    method: str = "phases"  # "phases" (measured per job) or "least_squares" (totals only)


@dataclass(frozen=True)
class _Sample:
    tokens: float
    wall: float  # per GPU: GPU-seconds / GPUs
    train: float
    eval_tokens: float
    eval_seconds: float


def _samples(pool: Pool, size_class: str, limit: int) -> list[_Sample]:
    from posttrain_server.jobs.models import FineTuningJob

    # Supervised jobs only: their trained tokens are what the training loop processed. A DPO
    # job reads two sequences per pair and an RL job mostly generates, at other rates.
    jobs = (FineTuningJob.objects.filter(pool=pool.name, size_class=size_class,
                                         method__type="supervised",
                                         status="succeeded", trained_tokens__gt=0)
            .annotate(n_attempts=Count("attempts")).filter(n_attempts=1)
            .order_by("-finished_at")[:limit])
    return [_Sample(tokens=float(job.trained_tokens),
                    wall=float(job.device_seconds) / max(1, int(job.training.get("gpus", 1))),
                    train=float(job.train_seconds),
                    eval_tokens=float(job.training.get("quoted_eval_tokens")
                                      or job.eval_tokens),
                    eval_seconds=float(job.eval_seconds))
            for job in jobs]


def _least_squares(samples: list[_Sample], startup: float) -> tuple[float, float]:
    """(seconds per token, startup) from totals: a line through (tokens, wall - evals)."""
    points = [(s.tokens, s.wall - s.eval_seconds) for s in samples]
    tokens = [t for t, _ in points]
    if len(set(tokens)) >= 2:
        n = len(points)
        mean_t, mean_s = sum(tokens) / n, sum(s for _, s in points) / n
        slope = (sum((t - mean_t) * (s - mean_s) for t, s in points)
                 / sum((t - mean_t) ** 2 for t in tokens))
        fitted_startup = mean_s - slope * mean_t
        if slope > 0 and fitted_startup >= 0:
            return slope, fitted_startup
    # one job size, or noisy runs: keep the startup, fit the rate only
    return sum(s - startup for _, s in points) / sum(tokens), startup


def pool_calibrate(*, pool_name: str, size_class: str, limit: int = 50,
                   save: bool = True) -> Calibration:
    pool = Pool.objects.get(name=pool_name)
    samples = _samples(pool, size_class, limit)
    if not samples:
        raise ValueError(f"no finished single-attempt {size_class} job on pool {pool_name} "
                         "to measure; run some first")
    gpus = pool.gpus_for(size_class)
    startup = float(pool.startup_seconds)
    if all(s.train > 0 for s in samples):
        method = "phases"
        slope = sum(s.train for s in samples) / sum(s.tokens for s in samples)
        startup = max(0.0, median(s.wall - s.train - s.eval_seconds for s in samples))
    else:
        method = "least_squares"
        slope, startup = _least_squares(samples, startup)
    throughput = 1.0 / (slope * gpus) if slope > 0 else pool.throughput_for(size_class)
    eval_tokens = sum(s.eval_tokens for s in samples if s.eval_seconds > 0)
    eval_seconds = sum(s.eval_seconds for s in samples if s.eval_seconds > 0)
    eval_throughput = round(eval_tokens / eval_seconds, 1) if eval_tokens > 0 else None
    previous_eval = (pool.eval_throughput or {}).get(size_class)
    result = Calibration(pool=pool_name, size_class=size_class, jobs=len(samples),
                         throughput=round(throughput, 1), startup_seconds=round(startup, 3),
                         previous_throughput=pool.throughput_for(size_class),
                         previous_startup_seconds=float(pool.startup_seconds),
                         eval_throughput=eval_throughput,
                         previous_eval_throughput=(float(previous_eval) if previous_eval
                                                   else None),
                         method=method)
    if save:
        pool.throughput = {**pool.throughput, size_class: result.throughput}
        pool.startup_seconds = Decimal(str(result.startup_seconds))
        fields = ["throughput", "startup_seconds"]
        if eval_throughput is not None:
            pool.eval_throughput = {**(pool.eval_throughput or {}),
                                    size_class: eval_throughput}
            fields.append("eval_throughput")
        pool.save(update_fields=fields)
    return result
