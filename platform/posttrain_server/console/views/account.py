"""The organization's side: API keys (shown once, revocable), usage and invoices, pools."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from posttrain_server.api.errors import NotFoundError
from posttrain_server.billing.invoices import invoice_csv, invoices_generate_all
from posttrain_server.billing.models import Invoice
from posttrain_server.billing.quotas import month_spend
from posttrain_server.billing.render import invoice_object
from posttrain_server.billing.selectors import quota_get
from posttrain_server.billing.usage_report import usage_buckets
from posttrain_server.console.access import console_view, org_of
from posttrain_server.pools.render import pool_objects
from posttrain_server.tenancy.models import ApiKey
from posttrain_server.tenancy.services import api_key_create, api_key_revoke

USAGE_DAYS = 31


@console_view
def keys(request: HttpRequest) -> HttpResponse:
    organization = org_of(request)
    issued = None
    if request.method == "POST":
        name = request.POST.get("name", "").strip()[:200]
        issued = api_key_create(organization=organization, name=name or "console")
        # The secret is in this response only; it is never stored or shown again.
    response = render(request, "console/keys.html", {
        "keys": ApiKey.objects.filter(organization=organization).order_by("-created_at"),
        "issued": issued})
    if issued is not None:
        response["Cache-Control"] = "no-store"
    return response


@require_POST
@console_view
def key_revoke(request: HttpRequest, key_id: str) -> HttpResponse:
    api_key = api_key_revoke(organization=org_of(request),
                             key_id=key_id)
    messages.success(request, f"Revoked {api_key.name or api_key.id} ({api_key.prefix}…): "
                     "requests with it now fail")
    return redirect("console:keys")


@console_view
def billing(request: HttpRequest) -> HttpResponse:
    organization = org_of(request)
    now = timezone.now()
    buckets = usage_buckets(organization=organization,
                            start=now - timedelta(days=USAGE_DAYS), end=now,
                            bucket_width="1d", group_by=["kind"])
    for bucket in buckets:
        bucket["day"] = datetime.fromtimestamp(bucket["start_time"], tz=UTC)
    quota = quota_get(organization=organization)
    invoices = [invoice_object(invoice) for invoice in
                invoices_generate_all(organization=organization)]
    for invoice in invoices:
        invoice["month"] = datetime.fromtimestamp(invoice["period_start"], tz=UTC)
    return render(request, "console/billing.html", {
        "buckets": buckets, "invoices": invoices, "usage_days": USAGE_DAYS,
        "month_spend": month_spend(organization=organization),
        "monthly_budget": quota.monthly_budget if quota else None,
        "max_concurrent_jobs": quota.max_concurrent_jobs if quota else None})


@console_view
def invoice_content(request: HttpRequest, invoice_id: str) -> HttpResponse:
    invoice = Invoice.objects.filter(organization=org_of(request),
                                     id=invoice_id).first()
    if invoice is None:
        raise NotFoundError(f"No such invoice: {invoice_id}")
    response = HttpResponse(invoice_csv(invoice=invoice), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{invoice.id}.csv"'
    return response


@console_view
def pools(request: HttpRequest) -> HttpResponse:
    pools_shown = pool_objects(organization=org_of(request))
    return render(request, "console/pools.html", {"pools": pools_shown})
