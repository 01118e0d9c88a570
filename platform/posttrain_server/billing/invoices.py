"""Monthly invoices: one per organization per month, lines computed from usage.

Lines group the month's usage rows by (usage kind, pool, method, size class, price book
version); each line is ``quantity x rate`` in ``Decimal``, rounded once (``prices.money``),
and the total is the sum of the rounded lines. Token kinds are quoted per million tokens,
GPU-seconds as GPU-hours at the pool's rate in that version. A job's own bill rounds its
two lines per job, so the invoice and the sum of its jobs' bills can differ by at most
$0.000001 per job and line.

``invoice_generate`` is idempotent and safe under concurrency: the invoice row is unique on
(organization, month); a second generator, even a simultaneous one, finds that row, locks it
and recomputes the same lines from the same usage. A past month's invoice is final.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.db.models.functions import TruncMonth
from django.utils import timezone

from posttrain_server.billing.models import Invoice, InvoiceLine, UsageKind, UsageRecord
from posttrain_server.billing.prices import (
    SECONDS_PER_HOUR,
    TOKENS_PER_UNIT,
    money,
)
from posttrain_server.billing.quotas import month_start
from posttrain_server.billing.selectors import price_rates_for
from posttrain_server.tenancy.models import Organization


def next_month(start: datetime) -> datetime:
    return (start.replace(year=start.year + 1, month=1) if start.month == 12
            else start.replace(month=start.month + 1))


def _lines(organization: Organization, start: datetime, end: datetime) -> list[InvoiceLine]:
    groups = (UsageRecord.objects.filter(organization=organization, created_at__gte=start,
                                         created_at__lt=end)
              .values("kind", "pool", "method", "size_class", "price_version")
              .annotate(quantity=Sum("quantity"))
              .order_by("pool", "method", "size_class", "price_version", "kind"))
    lines = []
    for group in groups:
        rates = price_rates_for(version=group["price_version"])
        quantity = Decimal(group["quantity"])
        if group["kind"] == UsageKind.DEVICE_SECONDS:
            unit, unit_price = "GPU-hour", rates.gpu_hour_rate(group["pool"])
            billed_quantity = quantity / SECONDS_PER_HOUR
        else:
            unit = "1M tokens"
            unit_price = rates.token_rate(group["kind"], group["method"], group["size_class"])
            billed_quantity = quantity / TOKENS_PER_UNIT
        lines.append(InvoiceLine(
            kind=group["kind"], pool=group["pool"], method=group["method"],
            size_class=group["size_class"], price_version=group["price_version"],
            quantity=quantity, unit=unit, unit_price=unit_price,
            amount=money(billed_quantity * unit_price)))
    return lines


def invoice_generate(*, organization: Organization, month: datetime,
                     now: datetime | None = None) -> Invoice:
    """The organization's invoice for the month containing ``month``: created once, its lines
    recomputed while the month is open, frozen (``final``) once it has ended."""
    now = now or timezone.now()
    start = month_start(month)
    end = next_month(start)
    try:
        with transaction.atomic():
            invoice, _ = Invoice.objects.get_or_create(
                organization=organization, period_start=start, defaults={"period_end": end})
    except IntegrityError:  # a simultaneous generator inserted it first
        invoice = Invoice.objects.get(organization=organization, period_start=start)
    with transaction.atomic():
        invoice = Invoice.objects.select_for_update().get(id=invoice.id)
        if invoice.status == "final":
            return invoice
        lines = _lines(organization, start, end)
        InvoiceLine.objects.filter(invoice=invoice).delete()
        for line in lines:
            line.invoice = invoice
        InvoiceLine.objects.bulk_create(lines)
        status = "final" if now >= end else "draft"
        total = sum((line.amount for line in lines), Decimal(0))
        Invoice.objects.filter(id=invoice.id).update(status=status, total=total,
                                                     updated_at=now)
    invoice.refresh_from_db()
    return invoice


def invoices_generate_all(*, organization: Organization) -> list[Invoice]:
    """An invoice for every month with usage (and the current month)."""
    months = set(UsageRecord.objects.filter(organization=organization)
                 .annotate(month=TruncMonth("created_at")).values_list("month", flat=True))
    months.add(month_start())
    done = {invoice.period_start for invoice in Invoice.objects.filter(
        organization=organization, status="final")}
    for month in sorted(months):
        if month_start(month) not in done:
            invoice_generate(organization=organization, month=month)
    return list(Invoice.objects.filter(organization=organization))


def invoice_csv(*, invoice: Invoice) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["invoice", "period_start", "kind", "pool", "method", "size_class",
                     "price_version", "quantity", "unit", "unit_price_usd", "amount_usd"])
    for line in invoice.lines.order_by("id"):
        writer.writerow([invoice.id, invoice.period_start.date().isoformat(), line.kind,
                         line.pool, line.method, line.size_class, line.price_version,
                         line.quantity, line.unit, line.unit_price, line.amount])
    writer.writerow([invoice.id, invoice.period_start.date().isoformat(), "total", "", "", "",
                     "", "", "", "", invoice.total])
    return buffer.getvalue()
