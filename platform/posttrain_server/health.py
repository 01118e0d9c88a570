"""Liveness and readiness for orchestrators.

``/healthz`` answers while the process can serve at all (restart me if not); ``/readyz``
answers 200 only when the database, the broker and storage all answer (send me traffic), so
a web pod without its dependencies is taken out of the load balancer instead of failing
requests.
"""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _broker() -> None:
    from posttrain_server.celery_app import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def _storage() -> None:
    from workers.storage import default_storage

    default_storage().exists("readyz-probe")


def readyz(request: HttpRequest) -> JsonResponse:
    checks = {}
    for name, check in (("database", _database), ("broker", _broker), ("storage", _storage)):
        try:
            check()
            checks[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure means not ready; say which
            checks[name] = f"error: {type(exc).__name__}: {exc}"[:300]
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks},
                        status=200 if ready else 503)
