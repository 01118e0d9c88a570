"""Usage over time and monthly invoices: grouped, priced per line, one invoice per month."""

from __future__ import annotations

import csv
import io
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal

from django.db import connections
from django.utils import timezone

from posttrain_server.billing.invoices import invoice_generate
from posttrain_server.billing.models import Invoice, UsageKind, UsageRecord
from posttrain_server.billing.services import usage_record
from posttrain_server.pools.services import pools_seed_defaults
from posttrain_server.tenancy.services import organization_get_or_create
from tests.unit.conftest import create_job


def bill(job, tokens: int, seconds: str, attempt: int = 1) -> None:
    usage_record(job=job, attempt=attempt, kind=UsageKind.TRAINED_TOKENS,
                 quantity=Decimal(tokens))
    usage_record(job=job, attempt=attempt, kind=UsageKind.DEVICE_SECONDS,
                 quantity=Decimal(seconds))


def test_usage_is_bucketed_by_hour_and_grouped_by_job_and_kind(alice, make_job):
    first, second = make_job(alice.organization), make_job(alice.organization, pool="rubin")
    bill(first, 1000, "10")
    bill(first, 500, "5", attempt=2)
    bill(second, 7, "1.5")

    body = alice.client.get("/v1/organization/usage",
                            {"bucket_width": "1h", "group_by": "job,kind"}).json()

    results = [r for bucket in body["data"] for r in bucket["results"]]
    totals = {(r["job_id"], r["kind"]): Decimal(r["quantity"]) for r in results}
    assert totals[(first.id, "trained_tokens")] == 1500
    assert totals[(first.id, "device_seconds")] == Decimal("15")
    assert totals[(second.id, "trained_tokens")] == 7
    assert all(b["end_time"] - b["start_time"] == 3600 for b in body["data"])
    by_pool = alice.client.get("/v1/organization/usage", {"group_by": "pool"}).json()
    pools = {(r["pool"], r["kind"]) for b in by_pool["data"] for r in b["results"]}
    assert pools == {("cpu", "trained_tokens"), ("cpu", "device_seconds"),
                     ("rubin", "trained_tokens"), ("rubin", "device_seconds")}


def test_a_bad_usage_query_is_a_clear_error(alice):
    response = alice.client.get("/v1/organization/usage", {"group_by": "colour"})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "group_by"
    response = alice.client.get("/v1/organization/usage", {"bucket_width": "1w"})
    assert response.json()["error"]["param"] == "bucket_width"


def test_an_invoice_has_a_priced_line_per_pool_method_and_kind_rounded_once(alice, make_job):
    cpu_jobs = [make_job(alice.organization) for _ in range(3)]
    rubin_job = make_job(alice.organization, pool="rubin")
    for job in cpu_jobs:
        bill(job, 5, "0.006")  # each $0.0000005 tokens, $0.00000017 compute: sub-cent parts
    bill(rubin_job, 2_000_000, "1800")

    body = alice.client.get("/v1/organization/invoices").json()

    assert len(body["data"]) == 1
    invoice = body["data"][0]
    lines = {(line["pool"], line["kind"]): line for line in invoice["lines"]}
    assert set(lines) == {("cpu", "trained_tokens"), ("cpu", "device_seconds"),
                          ("rubin", "trained_tokens"), ("rubin", "device_seconds")}
    # 15 tokens x $0.10/M = $0.0000015 -> one rounding: 0.000002 (not 3 x 0.000001)
    assert lines[("cpu", "trained_tokens")]["amount"] == "0.000002"
    assert lines[("cpu", "device_seconds")]["amount"] == "0.000001"  # 0.018 s x $0.10/h
    assert lines[("rubin", "trained_tokens")]["amount"] == "0.200000"
    assert lines[("rubin", "device_seconds")]["amount"] == "6.000000"  # 0.5 h x $12
    assert lines[("rubin", "device_seconds")]["unit"] == "GPU-hour"
    assert invoice["total"] == "6.200003"
    assert invoice["status"] == "draft"

    csv_text = alice.client.get(
        f"/v1/organization/invoices/{invoice['id']}/content").content.decode()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert len(rows) == 5 and rows[-1]["kind"] == "total"
    assert sum(Decimal(row["amount_usd"]) for row in rows[:-1]) == Decimal(rows[-1]["amount_usd"])


def test_generating_an_invoice_twice_gives_one_invoice(alice, bob, make_job):
    bill(make_job(alice.organization), 1000, "1")

    first = invoice_generate(organization=alice.organization, month=timezone.now())
    second = invoice_generate(organization=alice.organization, month=timezone.now())

    assert first.id == second.id and first.total == second.total
    assert Invoice.objects.filter(organization=alice.organization).count() == 1
    assert bob.client.get(f"/v1/organization/invoices/{first.id}").status_code == 404


def test_a_past_months_invoice_is_final_and_later_usage_never_changes_it(alice, make_job):
    job = make_job(alice.organization)
    bill(job, 1_000_000, "3600")
    UsageRecord.objects.update(created_at=datetime(2026, 10, 15, tzinfo=UTC))

    october = invoice_generate(organization=alice.organization,
                               month=datetime(2026, 10, 1, tzinfo=UTC))
    assert (october.status, october.total) == ("final", Decimal("0.200000"))
    bill(job, 999, "1", attempt=2)
    UsageRecord.objects.filter(attempt=2).update(created_at=datetime(2026, 10, 20, tzinfo=UTC))
    again = invoice_generate(organization=alice.organization,
                             month=datetime(2026, 10, 1, tzinfo=UTC))

    assert again.id == october.id and again.total == Decimal("0.200000")


def test_concurrent_invoice_generation_gives_one_invoice(transactional_db):
    pools_seed_defaults()
    organization = organization_get_or_create(name="invoice-race")
    bill(create_job(organization, eval_samples=0), 12345, "67.8")

    def generate(_: int) -> tuple[str, Decimal]:
        try:
            invoice = invoice_generate(organization=organization, month=timezone.now())
            return invoice.id, invoice.total
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = set(pool.map(generate, range(16)))

    assert len(outcomes) == 1
    assert Invoice.objects.filter(organization=organization).count() == 1
    invoice = Invoice.objects.get(organization=organization)
    assert invoice.lines.count() == 2
