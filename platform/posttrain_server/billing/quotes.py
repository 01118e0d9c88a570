"""What a job would cost on a pool: the estimate's arithmetic, from exact token counts.

Time on a pool is ``startup_seconds + tokens / (throughput per GPU x GPUs) + eval tokens /
eval throughput`` (evals run on one device while the others wait); GPU-seconds are GPUs x that
time, exactly what the bill meters (GPUs allocated x wall-clock of the attempt). Dollars come
from ``prices.job_cost`` with the same price book the job will be billed with, eval tokens at
their upper bound (``workers.trainer.eval_plan``), so the quote does not undershoot the bill's
eval tokens.

Reinforcement jobs are quoted on their rollouts (``RolloutTokensEstimate``): what the policy
trains on is what it generates, unknown before the run, so trained and rollout tokens are
quoted at their bound, and the training loop's time is modelled on the rollout tokens, since
every one of them is generated or re-read by the policy's forward and backward passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from posttrain_server.billing.prices import Cost, PriceRates, job_cost
from posttrain_server.pools.models import Pool
from workers.trainer.eval_plan import EvalTokensEstimate, EvalWorkload

SECONDS_QUANTUM = Decimal("0.001")


@dataclass(frozen=True)
class RolloutTokensEstimate:
    """A reinforcement job's rollouts (``workers.trainer.grpo``'s meter): every sample counts
    its templated prompt plus what it generates; the policy trains on the generated tokens.

    ``prompt_tokens`` is exact (each kept prompt, once per epoch, times the samples per
    prompt); ``generated_max`` bounds the generated tokens (every sample at
    ``max_completion_length``). The bill's rollout tokens lie between ``prompt_tokens`` and
    ``maximum``; its trained tokens between 0 and ``generated_max``.
    """

    prompt_tokens: int
    generated_max: int

    @classmethod
    def for_prompts(cls, prompts: list[int], *, epochs: int, generations: int,
                    max_completion_length: int) -> RolloutTokensEstimate:
        """Each kept prompt (its templated tokens), once per epoch, sampled ``generations``
        times, each sample at most ``max_completion_length`` tokens."""
        samples = epochs * generations
        return cls(prompt_tokens=samples * sum(prompts),
                   generated_max=samples * len(prompts) * max_completion_length)

    @property
    def maximum(self) -> int:
        return self.prompt_tokens + self.generated_max


@dataclass(frozen=True)
class PoolQuote:
    pool: str
    accelerator: str
    gpus: int
    tokens: int
    wall_seconds: Decimal
    gpu_seconds: Decimal
    cost: Cost
    workers_online: int
    eval: EvalTokensEstimate | None = None
    rollouts: RolloutTokensEstimate | None = None

    @property
    def gpu_hours(self) -> Decimal:
        return (self.gpu_seconds / Decimal(3600)).quantize(Decimal("0.000001"))

    def as_dict(self) -> dict:
        evals = self.eval or EvalTokensEstimate(read=0, maximum=0, segments=[])
        return {"pool": self.pool, "accelerator": self.accelerator, "gpus": self.gpus,
                "trained_tokens": self.tokens, "eval_tokens": evals.maximum,
                "eval_tokens_read": evals.read,
                "rollout_tokens": self.rollouts.maximum if self.rollouts else 0,
                "rollout_tokens_read": self.rollouts.prompt_tokens if self.rollouts else 0,
                "wall_seconds": str(self.wall_seconds),
                "gpu_hours": str(self.gpu_hours),
                "workers_online": self.workers_online,
                "cost": self.cost.as_dict()}


def pool_quote(*, pool: Pool, method: str, size_class: str, tokens: int, rates: PriceRates,
               workers_online: int = 0, evals: EvalWorkload | None = None,
               devices: int | None = None, eval_tokens: int | None = None,
               rollouts: RolloutTokensEstimate | None = None) -> PoolQuote:
    """One pool's quote. ``evals``: the job's eval workload (an estimate before the run);
    ``eval_tokens``: a finished job's metered eval tokens instead. ``devices``: the job's
    own device count, when it asked for one (it sets the checkpoint schedule). ``rollouts``:
    a reinforcement job's rollouts (``tokens`` is then their generated part)."""
    gpus = pool.gpus_for(size_class)
    estimate = (evals.estimate(devices or gpus) if evals is not None
                else EvalTokensEstimate(read=int(eval_tokens or 0),
                                        maximum=int(eval_tokens or 0), segments=[]))
    scored = estimate.maximum
    processed = rollouts.maximum if rollouts is not None else tokens
    training = Decimal(processed) / (Decimal(str(pool.throughput_for(size_class))) * gpus)
    evaluating = Decimal(scored) / Decimal(str(pool.eval_throughput_for(size_class)))
    wall = (Decimal(pool.startup_seconds) + training + evaluating).quantize(SECONDS_QUANTUM)
    gpu_seconds = wall * gpus
    cost = job_cost(method=method, size_class=size_class, pool=pool.name,
                    trained_tokens=tokens, device_seconds=gpu_seconds, eval_tokens=scored,
                    rollout_tokens=rollouts.maximum if rollouts is not None else 0, rates=rates)
    return PoolQuote(pool=pool.name, accelerator=pool.accelerator, gpus=gpus, tokens=tokens,
                     wall_seconds=wall, gpu_seconds=gpu_seconds, cost=cost,
                     workers_online=workers_online, eval=estimate, rollouts=rollouts)


def pools_quote(*, method: str, size_class: str, tokens: int, rates: PriceRates,
                enabled_only: bool = True, evals: EvalWorkload | None = None,
                devices: int | None = None,
                rollouts: RolloutTokensEstimate | None = None) -> list[PoolQuote]:
    """Quotes on every (enabled) pool, cheapest first; a pool the price book does not price
    is left out (it cannot be billed)."""
    from django.db.models import Count

    from posttrain_server.pools.selectors import pool_list, workers_online

    online = dict(workers_online().values_list("pool").annotate(n=Count("name")))
    quotes = [pool_quote(pool=pool, method=method, size_class=size_class, tokens=tokens,
                         rates=rates, workers_online=online.get(pool.name, 0), evals=evals,
                         devices=devices, rollouts=rollouts)
              for pool in pool_list(enabled_only=enabled_only)
              if pool.name in rates.gpu_hour_rates]
    return sorted(quotes, key=lambda quote: (quote.cost.total, quote.pool))
