"""The landing page: jobs by status, this month's spend, and the best gain per dollar."""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from posttrain_server.billing.quotas import month_spend
from posttrain_server.billing.selectors import quota_get
from posttrain_server.console.access import console_view, org_of
from posttrain_server.jobs.selectors import job_list
from posttrain_server.jobs.state_machine import JobStatus


def best_gain_per_dollar(jobs: Any) -> Any:
    """The finished job whose eval gained most per dollar (None before any has an eval)."""
    best = None
    for job in jobs.filter(status=JobStatus.SUCCEEDED, eval__isnull=False).order_by(
            "-finished_at")[:1000]:
        value = (job.eval or {}).get("gain_per_dollar")
        if isinstance(value, int | float) and (best is None or value > best[1]):
            best = (job, value)
    return best


@console_view
def dashboard(request: HttpRequest) -> HttpResponse:
    organization = org_of(request)
    jobs = job_list(organization=organization)
    counts = dict(jobs.order_by().values_list("status").annotate(n=Count("id")))
    quota = quota_get(organization=organization)
    best = best_gain_per_dollar(jobs)
    return render(request, "console/dashboard.html", {
        "statuses": [(status.value, counts.get(status.value, 0)) for status in JobStatus],
        "job_total": sum(counts.values()),
        "month_spend": month_spend(organization=organization),
        "monthly_budget": quota.monthly_budget if quota else None,
        "best": best,
        "recent": jobs.order_by("-created_at")[:10],
    })
