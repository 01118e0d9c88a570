"""``Idempotency-Key`` on POST: the first response is stored and replayed on retries.

The record is inserted *first*, in the same transaction as the work, so two concurrent requests
with one key serialize on the unique constraint: the loser waits, then replays the winner's
response. Errors are not stored (the transaction rolls back), so a corrected retry can succeed.
The same key with a different body is refused, since replaying would hide the difference.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework.request import Request
from rest_framework.response import Response

from posttrain_server.api.errors import ApiError, ConflictError
from posttrain_server.tenancy.models import IdempotencyRecord

HEADER = "Idempotency-Key"


def _digest(upload: Any) -> str:
    """Content hash of an upload, so a retry with other bytes of the same size is refused."""
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def _fingerprint(request: Request) -> str:
    files = {name: [upload.name, upload.size, _digest(upload)]
             for name, upload in getattr(request, "FILES", {}).items()}
    data = request.data
    if hasattr(data, "dict"):
        data = data.dict()
    data = {k: v for k, v in data.items() if k not in files} if isinstance(data, dict) else data
    payload = json.dumps([request.method, request.path, data, files], sort_keys=True,
                         default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _replay(record: IdempotencyRecord, fingerprint: str) -> Response:
    if record.request_fingerprint != fingerprint:
        raise ConflictError(
            "This Idempotency-Key was already used with a different request body.",
            param=HEADER, code="idempotency_key_reused",
        )
    response = Response(record.response_body, status=record.response_status)
    response["Idempotent-Replayed"] = "true"
    return response


def idempotent(handler: Callable[..., Response]) -> Callable[..., Response]:
    @functools.wraps(handler)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if not key:
            return handler(view, request, *args, **kwargs)
        if len(key) > 255:
            raise ApiError("Idempotency-Key must be at most 255 characters", param=HEADER)
        organization = request.user.organization
        fingerprint = _fingerprint(request)
        existing = IdempotencyRecord.objects.filter(organization=organization, key=key).first()
        if existing is not None:
            return _replay(existing, fingerprint)
        with transaction.atomic():
            try:
                with transaction.atomic():
                    record = IdempotencyRecord.objects.create(
                        organization=organization, key=key, request_fingerprint=fingerprint,
                        response_status=0, response_body={},
                    )
            except IntegrityError:
                record = None  # a concurrent request with this key committed first
            if record is not None:
                response = handler(view, request, *args, **kwargs)
                if response.status_code >= 400:
                    transaction.set_rollback(True)
                    return response
                record.response_status = response.status_code
                record.response_body = response.data
                record.save(update_fields=["response_status", "response_body"])
                return response
        winner = IdempotencyRecord.objects.get(organization=organization, key=key)
        return _replay(winner, fingerprint)

    return wrapper
