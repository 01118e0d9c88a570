"""What a job would cost, on every enabled pool side by side, before (or after) it runs.

``job_estimate`` takes the create request's body and resolves it exactly as ``job_create``
does (same checks, same hyperparameters, same held-out split for a given seed), counts the
trained tokens exactly with the base model's tokenizer, and prices them with the current
price book. Without a seed the estimate draws one and returns it: the held-out slice depends
on the seed, so passing that seed to create makes the bill's tokens equal the estimate's.

Eval tokens (``workers.trainer.eval_plan``): what the evals read (prompts, scored sequences)
is known before the run and returned exactly as ``eval_tokens_read``; what they generate
depends on the model's answers, so ``eval_tokens`` (priced, and timed) bounds it by the
answer budget. The bill's eval tokens lie between the two.

Reinforcement jobs train on what they generate: ``trained_tokens`` bounds the generated
tokens, ``rollout_tokens_read`` is the rollouts' exact prompt part and ``rollout_tokens`` their
bound (``billing.quotes.RolloutTokensEstimate``); the bill lies inside both ranges.
"""

from __future__ import annotations

from typing import Any

from posttrain_server.billing.quotas import month_spend
from posttrain_server.billing.quotes import RolloutTokensEstimate, pool_quote, pools_quote
from posttrain_server.billing.selectors import (
    price_rates_current,
    price_rates_for,
    quota_get,
)
from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.jobs.services import _job_request
from posttrain_server.pools.choice import AUTO, pool_choose
from posttrain_server.pools.selectors import pool_list
from posttrain_server.tenancy.models import Organization


def job_estimate(*, organization: Organization, data: dict[str, Any]) -> dict[str, Any]:
    request = _job_request(organization=organization, data=data)
    rates = price_rates_current()
    resolved = request["resolved"]
    quotes = pools_quote(method=request["method_type"], size_class=resolved.size_class,
                         tokens=request["trained_tokens"], rates=rates,
                         evals=request["evals"], devices=data.get("devices"),
                         rollouts=request["rollouts"])
    chosen = None
    if data.get("pool"):
        chosen = pool_choose(requested=data["pool"], quotes=quotes).quote.pool
    elif quotes:
        chosen = pool_choose(requested=AUTO, quotes=quotes).quote.pool
    quota = quota_get(organization=organization)
    budget = quota.monthly_budget if quota else None
    spent = month_spend(organization=organization) if budget is not None else None
    pools = []
    for quote in quotes:
        entry = quote.as_dict()
        entry["within_budget"] = (budget is None
                                  or spent + quote.cost.total <= budget)  # type: ignore[operator]
        pools.append(entry)
    evals = (next((q.eval for q in quotes if q.pool == chosen), None)
             or request["evals"].estimate(data.get("devices") or 1))
    rollouts: RolloutTokensEstimate | None = request["rollouts"]
    return {
        "object": "fine_tuning.job.estimate",
        "model": data["model"], "method": request["method_type"],
        "size_class": resolved.size_class, "seed": request["seed"],
        "n_epochs": request["hyper"]["n_epochs"],
        "trained_tokens": request["trained_tokens"],
        **evals.as_dict(),
        "rollout_tokens": rollouts.maximum if rollouts is not None else 0,
        "rollout_tokens_read": rollouts.prompt_tokens if rollouts is not None else 0,
        "price_version": rates.version,
        "pool": chosen,
        "monthly_budget": str(budget) if budget is not None else None,
        "month_spend": str(spent) if spent is not None else None,
        "pools": pools,
    }


def job_alternatives(*, job: FineTuningJob) -> list[dict[str, Any]]:
    """What a finished job's tokens would have cost on every other enabled pool, with the
    price book version it was billed with (the estimate's model of time, not a measurement)."""
    rates = price_rates_for(version=job.price_version)
    tokens = int(job.trained_tokens or 0)
    rollouts = (RolloutTokensEstimate(prompt_tokens=max(0, job.rollout_tokens - tokens),
                                      generated_max=tokens)
                if job.method_type == "reinforcement" else None)  # what it metered
    return [pool_quote(pool=pool, method=job.method_type, size_class=job.size_class,
                       tokens=tokens, rates=rates, eval_tokens=job.eval_tokens,
                       rollouts=rollouts).as_dict()
            for pool in pool_list(enabled_only=True)
            if pool.name != job.pool and pool.name in rates.gpu_hour_rates]

