"""Tenancy writes: organizations, API keys."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from posttrain_server.api.errors import NotFoundError
from posttrain_server.tenancy.models import ApiKey, Organization

KEY_PREFIX = "pt-"
_PREFIX_CHARS = 12


@dataclass(frozen=True)
class IssuedKey:
    """A new key: ``secret`` is shown once and never stored."""

    api_key: ApiKey
    secret: str


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def organization_get_or_create(*, name: str) -> Organization:
    try:
        with transaction.atomic():
            return Organization.objects.get_or_create(name=name)[0]
    except IntegrityError:  # a concurrent creator won; take theirs
        return Organization.objects.get(name=name)


@transaction.atomic
def api_key_create(*, organization: Organization, name: str = "") -> IssuedKey:
    lookup = secrets.token_hex(_PREFIX_CHARS // 2)
    secret = f"{KEY_PREFIX}{lookup}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        organization=organization, name=name, prefix=lookup, hashed_secret=hash_secret(secret)
    )
    return IssuedKey(api_key=api_key, secret=secret)


def api_key_revoke(*, organization: Organization, key_id: str) -> ApiKey:
    updated = ApiKey.objects.filter(
        id=key_id, organization=organization, revoked_at__isnull=True
    ).update(revoked_at=timezone.now())
    api_key = ApiKey.objects.filter(id=key_id, organization=organization).first()
    if api_key is None:
        raise NotFoundError(f"No API key {key_id!r}", param="key_id")
    del updated
    return api_key


def api_key_authenticate(secret: str) -> ApiKey | None:
    """The active key matching ``secret``, or None. Touches ``last_used_at`` at most per minute."""
    if not secret.startswith(KEY_PREFIX) or "_" not in secret:
        return None
    lookup = secret[len(KEY_PREFIX):].split("_", 1)[0]
    api_key = (ApiKey.objects.select_related("organization")
               .filter(prefix=lookup, revoked_at__isnull=True).first())
    if api_key is None or not hmac.compare_digest(api_key.hashed_secret, hash_secret(secret)):
        return None
    now = timezone.now()
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key


@transaction.atomic
def console_user_set(*, organization: Organization, username: str,
                     password: str | None = None) -> tuple[Any, str]:
    """Create or reset a console sign-in for ``organization``; returns (user, password).

    Without a password a random one is made and returned once; only its hash is stored.
    """
    from django.contrib.auth import get_user_model

    from posttrain_server.tenancy.models import Membership

    password = password or secrets.token_urlsafe(12)
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.set_password(password)
    user.save()
    Membership.objects.get_or_create(user=user, organization=organization)
    return user, password
