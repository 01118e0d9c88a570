"""Endpoints for training workers: claim and heartbeat an attempt.

Authenticated by the per-attempt token the worker received in its ``TrainJob`` message, not
by an API key: a worker can act on its own attempt and nothing else. Not in the public schema.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.errors import ConflictError
from posttrain_server.jobs import services


def _token(request: Request) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise exceptions.NotAuthenticated("Attempt token required")
    return token.strip()


@extend_schema(exclude=True)
class AttemptClaimView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def post(self, request: Request, attempt_id: str) -> Response:
        worker = str(request.data.get("worker", ""))[:200] if isinstance(request.data, dict) \
            else ""
        if not services.attempt_claim(attempt_id=attempt_id, token=_token(request),
                                      worker=worker):
            raise ConflictError("Attempt already claimed, cancelled or unknown",
                                code="claim_refused")
        return Response({"granted": True})


@extend_schema(exclude=True)
class AttemptHeartbeatView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def post(self, request: Request, attempt_id: str) -> Response:
        state = services.attempt_heartbeat(attempt_id=attempt_id, token=_token(request))
        if state is None:
            raise ConflictError("This attempt no longer holds the job's lease",
                                code="lease_lost")
        return Response(state)
