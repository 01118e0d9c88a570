"""Structured logs for every process: JSON lines carrying the request id and the job id.

Both sides (Django and the Django-free workers) configure logging through ``logging_config``,
and code that knows which request or job it serves sets ``request_id`` / ``job_id``; a filter
stamps them on every record, so one job's story can be followed across web server, platform
worker, training worker and trainer with a single grep.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from workers import env

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
job_id: ContextVar[str | None] = ContextVar("job_id", default=None)


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        record.job_id = job_id.get()
        return True


def logging_config(level: str | None = None) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` dict: JSON by default, ``POSTTRAIN_LOG_FORMAT=text``."""
    fmt = env.env_str("POSTTRAIN_LOG_FORMAT", "json")
    if fmt not in {"json", "text"}:
        raise env.ConfigError(f"POSTTRAIN_LOG_FORMAT={fmt!r}: use json or text")
    formatter: dict[str, Any] = (
        {"()": "pythonjsonlogger.json.JsonFormatter",
         "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(job_id)s",
         "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"}}
        if fmt == "json" else
        {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s %(job_id)s] %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": ContextFilter}},
        "formatters": {"main": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "main",
                                 "filters": ["context"]}},
        "root": {"handlers": ["console"],
                 "level": level or env.env_str("POSTTRAIN_LOG_LEVEL", "INFO")},
        # Per-request lines from the HTTP client (heartbeats every few seconds) drown the rest.
        "loggers": {"django.server": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
    }
