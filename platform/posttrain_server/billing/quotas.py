"""An organization's monthly budget and concurrent-job limit, checked where jobs are written.

``quota_check`` runs inside the transaction that creates the job and locks the
organization's quota row first (``SELECT ... FOR UPDATE``), so parallel creates are
serialized per organization and 200 at once against a limit of 5 admit exactly 5. On SQLite
the write transaction itself is exclusive (``transaction_mode=IMMEDIATE``).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db.models import Case, DecimalField, F, Sum, When
from django.utils import timezone

from posttrain_server.api.errors import ApiError
from posttrain_server.billing.models import OrganizationQuota
from posttrain_server.tenancy.models import Organization


def month_start(now: datetime | None = None) -> datetime:
    now = now or timezone.now()
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def month_spend(*, organization: Organization, now: datetime | None = None) -> Decimal:
    """This month's jobs: the billed cost of finished ones, the quote of the others."""
    from posttrain_server.jobs.models import FineTuningJob
    from posttrain_server.jobs.state_machine import TERMINAL

    money = DecimalField(max_digits=20, decimal_places=6)
    total = FineTuningJob.objects.filter(
        organization=organization, created_at__gte=month_start(now)).aggregate(total=Sum(Case(
            When(status__in=TERMINAL, then=F("cost_tokens") + F("cost_compute")),
            default=F("quoted_cost"), output_field=money)))["total"]
    return Decimal(total or 0)


def quota_check(*, organization: Organization, quoted_cost: Decimal) -> None:
    """Refuse (429, not retryable as is) a job over the concurrent limit or monthly budget.

    The caller holds the transaction that writes the job.
    """
    from posttrain_server.jobs.models import FineTuningJob
    from posttrain_server.jobs.state_machine import ACTIVE

    quota = OrganizationQuota.objects.select_for_update().filter(
        organization=organization).first()
    if quota is None:
        return
    if quota.max_concurrent_jobs is not None:
        active = FineTuningJob.objects.filter(organization=organization,
                                              status__in=ACTIVE).count()
        if active >= quota.max_concurrent_jobs:
            raise ApiError(f"Your organization already has {active} unfinished jobs, its "
                           f"limit; wait for one to finish or cancel one",
                           code="concurrent_job_limit", status_code=429, retryable=False)
    if quota.monthly_budget is not None:
        spent = month_spend(organization=organization)
        if spent + quoted_cost > quota.monthly_budget:
            raise ApiError(f"This job's estimate (${quoted_cost}) would take this month's "
                           f"spend (${spent}) over the monthly budget "
                           f"(${quota.monthly_budget})", code="monthly_budget_exceeded",
                           status_code=429, retryable=False)
