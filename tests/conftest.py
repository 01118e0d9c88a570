"""One fixture world: two organizations (alice's and bob's), each with an API key.

Tests talk to the real database (PostgreSQL in CI, SQLite locally) and, for end-to-end tests,
to a real stack of processes on the real broker; see ``tests/e2e/conftest.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from posttrain_server.tenancy.models import Organization
from posttrain_server.tenancy.services import api_key_create, organization_get_or_create


@dataclass
class Tenant:
    organization: Organization
    key: str
    client: APIClient


def make_tenant(name: str) -> Tenant:
    organization = organization_get_or_create(name=name)
    key = api_key_create(organization=organization, name=f"{name} test key").secret
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return Tenant(organization, key, client)


@pytest.fixture
def alice(db) -> Tenant:
    return make_tenant("alice")


@pytest.fixture
def bob(db) -> Tenant:
    return make_tenant("bob")


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()
