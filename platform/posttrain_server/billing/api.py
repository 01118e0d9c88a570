"""Organization billing API: usage over time and monthly invoices (with a CSV export)."""

from __future__ import annotations

from datetime import UTC, datetime

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.errors import ApiError, NotFoundError
from posttrain_server.api.schema import errors
from posttrain_server.billing.invoices import invoice_csv, invoices_generate_all
from posttrain_server.billing.models import Invoice
from posttrain_server.billing.render import invoice_object
from posttrain_server.billing.usage_report import BUCKETS, GROUPS, usage_buckets
from posttrain_server.tenancy.auth import organization_of

InvoiceSerializer = inline_serializer(name="Invoice", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "period_start": serializers.IntegerField(), "period_end": serializers.IntegerField(),
    "status": serializers.ChoiceField(choices=["draft", "final"]),
    "currency": serializers.CharField(),
    "total": serializers.CharField(help_text="USD, decimal string: the sum of the lines"),
    "lines": serializers.ListField(child=serializers.JSONField(), help_text="kind, pool, "
                                   "method, size_class, price_version, quantity, unit, "
                                   "unit_price, amount"),
})

# What ``datetime.fromtimestamp`` accepts: 1970 up to the end of year 9999.
TIMESTAMP = {"type": "integer", "minimum": 0, "maximum": 253_402_300_799}


def _timestamp(request: Request, name: str, default: datetime) -> datetime:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
        if not TIMESTAMP["minimum"] <= value <= TIMESTAMP["maximum"]:
            raise ValueError(value)
        return datetime.fromtimestamp(value, tz=UTC)
    except (ValueError, OverflowError, OSError) as exc:
        raise ApiError(f"{name} must be a Unix timestamp in seconds", param=name) from exc


class UsageView(APIView):
    @extend_schema(operation_id="organization_usage", description="Posttrain extension.",
                   parameters=[
                       OpenApiParameter("start_time", TIMESTAMP, description="Unix "
                                        "seconds (default: 30 days ago)"),
                       OpenApiParameter("end_time", TIMESTAMP, description="Unix seconds "
                                        "(default: now)"),
                       OpenApiParameter("bucket_width", str, enum=list(BUCKETS)),
                       OpenApiParameter("group_by", str, many=True, enum=list(GROUPS),
                                        description="Repeat or comma-separate")],
                   responses={200: inline_serializer(name="UsagePage", fields={
                       "object": serializers.CharField(),
                       "data": serializers.ListField(child=serializers.JSONField())}),
                       **errors(400)})
    def get(self, request: Request) -> Response:
        now = timezone.now()
        end = _timestamp(request, "end_time", now)
        start = _timestamp(request, "start_time", end - timezone.timedelta(days=30))
        width = request.query_params.get("bucket_width", "1d")
        if width not in BUCKETS:
            raise ApiError(f"bucket_width must be one of {', '.join(BUCKETS)}",
                           param="bucket_width")
        group_by = [name for value in request.query_params.getlist("group_by")
                    for name in value.split(",") if name]
        unknown = sorted(set(group_by) - set(GROUPS))
        if unknown:
            raise ApiError(f"Cannot group by {unknown[0]!r}; use {', '.join(GROUPS)}",
                           param="group_by")
        data = usage_buckets(organization=organization_of(request), start=start, end=end,
                             bucket_width=width, group_by=group_by)
        return Response({"object": "page", "data": data})


class InvoiceListView(APIView):
    @extend_schema(operation_id="organization_invoices_list",
                   description="Posttrain extension: one invoice per month with usage "
                   "(the current month's is a draft, recomputed on each request).",
                   responses={200: inline_serializer(name="InvoiceList", fields={
                       "object": serializers.CharField(),
                       "data": serializers.ListField(child=InvoiceSerializer)}),
                       **errors()})
    def get(self, request: Request) -> Response:
        invoices = invoices_generate_all(organization=organization_of(request))
        return Response({"object": "list", "data": [invoice_object(i) for i in invoices]})


def _invoice(request: Request, invoice_id: str) -> Invoice:
    invoice = Invoice.objects.filter(organization=organization_of(request),
                                     id=invoice_id).first()
    if invoice is None:
        raise NotFoundError(f"No such invoice: {invoice_id}", param="invoice_id")
    return invoice


class InvoiceDetailView(APIView):
    @extend_schema(operation_id="organization_invoices_retrieve",
                   responses={200: InvoiceSerializer, **errors(404)})
    def get(self, request: Request, invoice_id: str) -> Response:
        return Response(invoice_object(_invoice(request, invoice_id)))


class InvoiceCsvView(APIView):
    @extend_schema(operation_id="organization_invoices_csv",
                   responses={(200, "text/csv"): bytes, **errors(404)})
    def get(self, request: Request, invoice_id: str) -> HttpResponse:
        invoice = _invoice(request, invoice_id)
        response = HttpResponse(invoice_csv(invoice=invoice), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="{invoice.id}.csv"'
        return response
