"""Billing reads: the price book in effect, a given version's rates, an org's quota."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from posttrain_server.billing.models import OrganizationQuota, PriceBook
from posttrain_server.billing.prices import DEFAULT_RATES, PriceRates
from posttrain_server.tenancy.models import Organization


def price_rates_current(*, now: datetime | None = None) -> PriceRates:
    """The newest price book in effect; the seeded defaults if the table is empty."""
    book = PriceBook.objects.filter(effective_at__lte=now or timezone.now()).first()
    return book.rates() if book else DEFAULT_RATES


def price_rates_for(*, version: str) -> PriceRates:
    """The rates a job was quoted with (its stored version), so a bill is never repriced."""
    book = PriceBook.objects.filter(version=version).first()
    if book is not None:
        return book.rates()
    if version in ("", DEFAULT_RATES.version):
        return DEFAULT_RATES
    raise LookupError(f"price book version {version!r} does not exist")


def quota_get(*, organization: Organization) -> OrganizationQuota | None:
    return OrganizationQuota.objects.filter(organization=organization).first()
