"""``client.models``: list, retrieve, and download a fine-tuned model's weights."""

from __future__ import annotations

from pathlib import Path

from posttrain._base_client import (
    AsyncAPIClient,
    AsyncPager,
    PagePlan,
    Plan,
    Request,
    SyncAPIClient,
    SyncPager,
)
from posttrain.resources._resource import Resource, segment
from posttrain.resources.fine_tuning import extract_plan
from posttrain.types import CursorPage, Model


def list_plan() -> PagePlan[Model]:
    def page(after: str | None) -> Plan[CursorPage[Model]]:
        result: CursorPage[Model] = yield Request("GET", "/models", cast=CursorPage[Model],
                                                  params={"after": after})
        return result
    return page


def retrieve_plan(model: str) -> Plan[Model]:
    result: Model = yield Request("GET", f"/models/{segment(model)}", cast=Model)
    return result


def download_plan(model: str, directory: Path) -> Plan[Path]:
    return (yield from extract_plan(f"/models/{segment(model)}/content", directory))


class Models(Resource[SyncAPIClient]):
    def list(self) -> SyncPager[Model]:
        return SyncPager(self._client, list_plan())

    def retrieve(self, model: str) -> Model:
        return self._client._run(retrieve_plan(model))

    def download(self, model: str, directory: str | Path) -> Path:
        """Unpack a fine-tuned model (a LoRA adapter, or the full model) into ``directory``.

        The server sends a tar; members that would land outside ``directory`` (absolute paths,
        ``..``, links) make it raise ``UnsafeArchiveError`` before anything is written.
        """
        return self._client._run(download_plan(model, Path(directory)))


class AsyncModels(Resource[AsyncAPIClient]):
    def list(self) -> AsyncPager[Model]:
        return AsyncPager(self._client, list_plan())

    async def retrieve(self, model: str) -> Model:
        return await self._client._run(retrieve_plan(model))

    async def download(self, model: str, directory: str | Path) -> Path:
        return await self._client._run(download_plan(model, Path(directory)))
