"""Who the console is acting for: a signed-in person, through one of their organizations.

The console signs people in with Django sessions; everything they see or change belongs to
the organization chosen in the session (their first membership until they switch), exactly
the scope an API key of that organization has.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from posttrain_server.api.errors import ApiError
from posttrain_server.tenancy.models import Organization

SESSION_ORG = "console_organization"


def organizations_of(user: Any) -> list[Organization]:
    return [m.organization for m in user.memberships.select_related("organization")
            .order_by("created_at", "id")]


def request_organizations(request: HttpRequest) -> list[Organization]:
    """The signed-in person's organizations, read once per request (the view and the page
    header both need them)."""
    if not hasattr(request, "_console_organizations"):
        request._console_organizations = organizations_of(request.user)  # type: ignore[attr-defined]
    return request._console_organizations  # type: ignore[attr-defined]


def current_organization(request: HttpRequest) -> Organization | None:
    organizations = request_organizations(request)
    chosen = request.session.get(SESSION_ORG)
    for organization in organizations:
        if organization.id == chosen:
            return organization
    return organizations[0] if organizations else None


def console_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Signed in, with an organization; another organization's ids are plain 404s.

    Selectors raise the API's 404 errors; here it becomes Django's 404 page, so an id
    of someone else's object looks exactly like an id that never existed.
    """

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        organization = current_organization(request)
        if organization is None:
            return render(request, "console/no_organization.html", status=403)
        request.organization = organization  # type: ignore[attr-defined]
        try:
            return view(request, *args, **kwargs)
        except ApiError as exc:
            if exc.status_code == 404:
                raise Http404(exc.message) from exc
            raise

    return wrapper


def org_of(request: HttpRequest) -> Organization:
    """The organization ``console_view`` chose for this request."""
    return request.organization  # type: ignore[attr-defined]
