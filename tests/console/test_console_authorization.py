"""Every console route that names an object, every method: another organization's person
gets the same 404 as for an id that never existed. Generated from the URL configuration, so a
new console route without a case here fails."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from posttrain_server.billing.invoices import invoice_generate
from posttrain_server.jobs.models import Checkpoint, FineTuningJob
from posttrain_server.tenancy.services import api_key_create

from .test_console_pages import sft_form

ID_ROUTE = re.compile(r"<(?:\w+:)?(\w+)>")


def _patterns(resolver: URLResolver, prefix: str = "", namespace: str = "") -> list:
    found = []
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += _patterns(entry, route, entry.namespace or namespace)
        elif isinstance(entry, URLPattern) and namespace == "console":
            found.append(route)
    return found


def console_object_routes() -> list[str]:
    return sorted(route for route in _patterns(get_resolver()) if ID_ROUTE.search(route))


CASES: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {
    "files/<str:file_id>": lambda w: {"file_id": w["file_id"]},
    "files/<str:file_id>/content": lambda w: {"file_id": w["file_id"]},
    "files/<str:file_id>/delete": lambda w: {"file_id": w["file_id"]},
    "jobs/<str:job_id>": lambda w: {"job_id": w["job_id"]},
    "jobs/<str:job_id>/model": lambda w: {"job_id": w["job_id"]},
    "jobs/<str:job_id>/checkpoints/<str:checkpoint_id>":
        lambda w: {"job_id": w["job_id"], "checkpoint_id": w["checkpoint_id"]},
    "jobs/<str:job_id>/cancel": lambda w: {"job_id": w["job_id"]},
    "jobs/<str:job_id>/pause": lambda w: {"job_id": w["job_id"]},
    "jobs/<str:job_id>/resume": lambda w: {"job_id": w["job_id"]},
    "keys/<str:key_id>/revoke": lambda w: {"key_id": w["key_id"]},
    "billing/invoices/<str:invoice_id>.csv": lambda w: {"invoice_id": w["invoice_id"]},
}


@pytest.fixture
def world(carol, validated_file) -> dict[str, str]:
    file_id = validated_file(carol)
    carol.client.post("/jobs/new", sft_form(file_id, action="create"))
    job = FineTuningJob.objects.get(organization=carol.organization)
    checkpoint = Checkpoint.objects.create(job=job, attempt=1, step=5,
                                           storage_key=f"jobs/{job.id}/attempt-1/step-5.tar")
    invoice = invoice_generate(organization=carol.organization, month=timezone.now())
    key = api_key_create(organization=carol.organization, name="carol's").api_key
    return {"file_id": file_id, "job_id": job.id, "checkpoint_id": checkpoint.id,
            "key_id": key.id, "invoice_id": invoice.id}


def test_every_console_route_with_an_object_id_has_a_case():
    missing = sorted(set(console_object_routes()) - set(CASES))
    assert not missing, f"add an authorization case for {missing}"


def _url(route: str, params: dict[str, str]) -> str:
    return "/" + ID_ROUTE.sub(lambda m: params[m.group(1)], route)


@pytest.mark.parametrize("route", console_object_routes())
@pytest.mark.parametrize("method", ["get", "post"])
def test_another_organization_gets_404_for_every_object_route(route, method, world, carol,
                                                              dave):
    params = CASES[route](world)
    url = _url(route, params)
    response = getattr(dave.client, method)(url)
    made_up = {key: value[:-4] + "zzzz" for key, value in params.items()}
    unknown = getattr(dave.client, method)(_url(route, made_up))
    if response.status_code == 405:  # the route takes the other method only
        assert unknown.status_code == 405
        return
    assert response.status_code == 404, (method, url, response.content[:200])
    assert unknown.status_code == 404
    assert params[next(iter(params))].encode() not in response.content
    FineTuningJob.objects.filter(id=world["job_id"]).update(status="queued")
    # the owner is not refused for the same reason (the case names her object)
    if not url.endswith(("/model", "/content")) and "/checkpoints/" not in url:
        assert getattr(carol.client, method)(url).status_code != 404
