"""``client.organization``: usage over time and monthly invoices (Posttrain extensions)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from posttrain._base_client import AsyncAPIClient, Plan, Request, SyncAPIClient
from posttrain.resources._resource import Resource, segment
from posttrain.types import Invoice, UsageBucket


class _UsagePage(BaseModel):
    object: str = "page"
    data: list[UsageBucket] = []


class _InvoiceList(BaseModel):
    object: str = "list"
    data: list[Invoice] = []


def usage_plan(*, start_time: int | None, end_time: int | None, bucket_width: str | None,
               group_by: Sequence[str] | None) -> Plan[list[UsageBucket]]:
    params: dict[str, Any] = {"start_time": start_time, "end_time": end_time,
                              "bucket_width": bucket_width,
                              "group_by": ",".join(group_by) if group_by else None}
    page: _UsagePage = yield Request("GET", "/organization/usage", cast=_UsagePage,
                                     params=params)
    return page.data


def invoices_plan() -> Plan[list[Invoice]]:
    page: _InvoiceList = yield Request("GET", "/organization/invoices", cast=_InvoiceList)
    return page.data


def invoice_plan(invoice_id: str) -> Plan[Invoice]:
    result: Invoice = yield Request("GET", f"/organization/invoices/{segment(invoice_id)}",
                                    cast=Invoice)
    return result


def invoice_download_plan(invoice_id: str, path: Path) -> Plan[Path]:
    result: Path = yield Request(
        "GET", f"/organization/invoices/{segment(invoice_id)}/content", download_to=path)
    return result


class Invoices(Resource[SyncAPIClient]):
    def list(self) -> list[Invoice]:
        """One invoice per month with usage; the current month's is a draft."""
        return self._client._run(invoices_plan())

    def retrieve(self, invoice_id: str) -> Invoice:
        return self._client._run(invoice_plan(invoice_id))

    def download(self, invoice_id: str, path: str | Path) -> Path:
        """The invoice as CSV."""
        return self._client._run(invoice_download_plan(invoice_id, Path(path)))


class AsyncInvoices(Resource[AsyncAPIClient]):
    async def list(self) -> list[Invoice]:
        return await self._client._run(invoices_plan())

    async def retrieve(self, invoice_id: str) -> Invoice:
        return await self._client._run(invoice_plan(invoice_id))

    async def download(self, invoice_id: str, path: str | Path) -> Path:
        return await self._client._run(invoice_download_plan(invoice_id, Path(path)))


class Organization(Resource[SyncAPIClient]):
    def __init__(self, client: SyncAPIClient) -> None:
        super().__init__(client)
        self.invoices = Invoices(client)

    def usage(self, *, start_time: int | None = None, end_time: int | None = None,
              bucket_width: str | None = None, group_by: Sequence[str] | None = None
              ) -> list[UsageBucket]:
        """Usage summed in time buckets (``1d`` or ``1h``), optionally grouped by ``job``,
        ``pool``, ``method`` and ``kind``; times are Unix seconds."""
        return self._client._run(usage_plan(start_time=start_time, end_time=end_time,
                                            bucket_width=bucket_width, group_by=group_by))


class AsyncOrganization(Resource[AsyncAPIClient]):
    def __init__(self, client: AsyncAPIClient) -> None:
        super().__init__(client)
        self.invoices = AsyncInvoices(client)

    async def usage(self, *, start_time: int | None = None, end_time: int | None = None,
                    bucket_width: str | None = None, group_by: Sequence[str] | None = None
                    ) -> list[UsageBucket]:
        return await self._client._run(usage_plan(start_time=start_time, end_time=end_time,
                                                  bucket_width=bucket_width,
                                                  group_by=group_by))
