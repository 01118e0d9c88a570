"""Every route that names an object, every method: another organization's id answers 404.

The matrix is generated from the URL configuration, so a new route without a case here fails
``test_every_route_with_an_object_id_has_a_case``: authorization is never assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from posttrain_server.billing.invoices import invoice_generate
from posttrain_server.jobs.models import Checkpoint, FineTuningJob

ID_ROUTE = re.compile(r"<(?:\w+:)?(\w+)>")


def _patterns(resolver: URLResolver, prefix: str = "") -> list[tuple[str, URLPattern]]:
    found = []
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += _patterns(entry, route)
        else:
            found.append((route, entry))
    return found


def object_routes() -> dict[str, Any]:
    routes = {}
    for route, pattern in _patterns(get_resolver()):
        if route.startswith("v1/") and ID_ROUTE.search(route):
            routes[route] = pattern.callback.view_class
    return routes


def methods(view_class: Any) -> list[str]:
    return [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view_class, m)]


@pytest.fixture
def world(alice, processed_file) -> dict[str, str]:
    """Alice's objects of every kind, by URL parameter name."""
    file_id = processed_file(alice)
    job = alice.client.post("/v1/fine_tuning/jobs", {
        "model": "posttrain-tiny", "training_file": file_id}, format="json").json()
    job_row = FineTuningJob.objects.get(id=job["id"])
    checkpoint = Checkpoint.objects.create(job=job_row, attempt=1, step=5,
                                           storage_key=f"jobs/{job_row.id}/attempt-1/step-5.tar")
    FineTuningJob.objects.filter(id=job_row.id).update(
        fine_tuned_model=f"ft:posttrain-tiny:alice::{job_row.id[6:18]}",
        adapter_key=f"jobs/{job_row.id}/model.tar", adapter_kind="lora")
    invoice = invoice_generate(organization=alice.organization, month=timezone.now())
    return {"file_id": file_id, "job_id": job_row.id, "checkpoint_id": checkpoint.id,
            "model": f"ft:posttrain-tiny:alice::{job_row.id[6:18]}",
            "invoice_id": invoice.id}


# How to fill each route's parameters from alice's world; a new route needs a line here.
CASES: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {
    "v1/files/<str:file_id>": lambda w: {"file_id": w["file_id"]},
    "v1/files/<str:file_id>/content": lambda w: {"file_id": w["file_id"]},
    "v1/fine_tuning/jobs/<str:job_id>": lambda w: {"job_id": w["job_id"]},
    "v1/fine_tuning/jobs/<str:job_id>/cancel": lambda w: {"job_id": w["job_id"]},
    "v1/fine_tuning/jobs/<str:job_id>/pause": lambda w: {"job_id": w["job_id"]},
    "v1/fine_tuning/jobs/<str:job_id>/resume": lambda w: {"job_id": w["job_id"]},
    "v1/fine_tuning/jobs/<str:job_id>/events": lambda w: {"job_id": w["job_id"]},
    "v1/fine_tuning/jobs/<str:job_id>/checkpoints": lambda w: {"job_id": w["job_id"]},
    "v1/fine_tuning/jobs/<str:job_id>/checkpoints/<str:checkpoint_id>/content":
        lambda w: {"job_id": w["job_id"], "checkpoint_id": w["checkpoint_id"]},
    "v1/models/<path:model>": lambda w: {"model": w["model"]},
    "v1/organization/invoices/<str:invoice_id>": lambda w: {"invoice_id": w["invoice_id"]},
    "v1/organization/invoices/<str:invoice_id>/content":
        lambda w: {"invoice_id": w["invoice_id"]},
    "v1/models/<path:model>/content": lambda w: {"model": w["model"]},
}


def test_every_route_with_an_object_id_has_a_case():
    missing = sorted(set(object_routes()) - set(CASES))
    assert not missing, f"add an authorization case for {missing}"


def _url(route: str, params: dict[str, str]) -> str:
    return "/" + ID_ROUTE.sub(lambda m: params[m.group(1)], route)


@pytest.mark.parametrize(("route", "method"), [
    (route, method) for route, view in sorted(object_routes().items())
    for method in methods(view)])
def test_another_organization_gets_404_for_every_object_route(route, method, world, alice,
                                                              bob):
    params = CASES[route](world)
    url = _url(route, params)
    response = getattr(bob.client, method)(url, {}, format="json")
    assert response.status_code == 404, (method, url, response.content[:200])
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}
    # Indistinguishable from an id that never existed: nothing confirms alice's object.
    made_up = {key: value[:-4] + "zzzz" for key, value in params.items()}
    unknown = getattr(bob.client, method)(_url(route, made_up), {}, format="json")
    body = response.content.decode()
    for key, value in params.items():
        body = body.replace(value, made_up[key])
    assert (response.status_code, body) == (unknown.status_code, unknown.content.decode())
    # and the owner is not refused for the same reason (the case really names her object)
    assert getattr(alice.client, method)(url, {}, format="json").status_code != 404 or (
        route.endswith("/content"))


@pytest.mark.parametrize("path", ["/v1/files", "/v1/fine_tuning/jobs", "/v1/models",
                                  "/v1/organization/invoices", "/v1/organization/usage"])
def test_lists_never_show_another_organizations_objects(path, world, bob):
    body = bob.client.get(path).content.decode()
    for value in world.values():
        assert value not in body


@pytest.mark.parametrize("field", ["organization_id", "status", "cost", "usage",
                                   "trained_tokens", "fine_tuned_model", "eval"])
def test_clients_cannot_set_server_owned_fields(field, alice, processed_file):
    file_id = processed_file(alice)
    response = alice.client.post("/v1/fine_tuning/jobs", {
        "model": "posttrain-tiny", "training_file": file_id, field: "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == field
    assert not FineTuningJob.objects.filter(organization=alice.organization).exists()
