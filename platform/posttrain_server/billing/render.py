"""The invoice object, shared by the API and the console."""

from __future__ import annotations

from posttrain_server.billing.models import Invoice


def invoice_object(invoice: Invoice) -> dict:
    return {
        "id": invoice.id, "object": "invoice",
        "period_start": int(invoice.period_start.timestamp()),
        "period_end": int(invoice.period_end.timestamp()),
        "status": invoice.status, "currency": "usd", "total": str(invoice.total),
        "lines": [{"kind": line.kind, "pool": line.pool, "method": line.method,
                   "size_class": line.size_class, "price_version": line.price_version,
                   "quantity": str(line.quantity), "unit": line.unit,
                   "unit_price": str(line.unit_price), "amount": str(line.amount)}
                  for line in invoice.lines.order_by("id")],
    }
