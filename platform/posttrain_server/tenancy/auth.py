"""Bearer API-key authentication for every ``/v1`` route."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, throttling
from rest_framework.request import Request

from posttrain_server.tenancy.models import ApiKey, Organization
from posttrain_server.tenancy.services import api_key_authenticate


@dataclass(frozen=True)
class OrgPrincipal:
    """Who is calling: an organization, through one of its keys."""

    organization: Organization
    api_key: ApiKey | None = None
    is_authenticated: bool = True


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[OrgPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise exceptions.AuthenticationFailed("Expected 'Authorization: Bearer <API key>'.")
        api_key = api_key_authenticate(secret.strip())
        if api_key is None:
            raise exceptions.AuthenticationFailed("Incorrect or revoked API key provided.")
        return OrgPrincipal(organization=api_key.organization, api_key=api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiKeyRateThrottle(throttling.SimpleRateThrottle):
    """Per API key request budget (``POSTTRAIN_RATE_LIMIT``, e.g. ``1200/min``): 429 with
    ``Retry-After`` past it. Counted in the shared cache, so every web process agrees."""

    scope = "api_key"

    def get_rate(self) -> str:
        return settings.RATE_LIMIT

    def get_cache_key(self, request: Request, view: object) -> str | None:
        api_key = getattr(request, "auth", None)
        if not isinstance(api_key, ApiKey):
            return None  # unauthenticated requests are refused before they cost anything
        return f"throttle:{self.scope}:{api_key.id}"


def organization_of(request: Request) -> Organization:
    return request.user.organization


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the Bearer API key in the OpenAPI schema."""

    target_class = "posttrain_server.tenancy.auth.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer",
                "description": "An API key from `manage.py create_api_key` (pt-...)"}
