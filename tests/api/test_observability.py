"""Health, readiness, metrics and request ids."""

from __future__ import annotations

import json
import logging
import logging.config

import pytest

from workers import logcontext


def test_healthz_answers_without_credentials(anonymous):
    response = anonymous.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_checks_database_broker_and_storage(anonymous, db):
    response = anonymous.get("/readyz")
    body = response.json()
    assert set(body["checks"]) == {"database", "broker", "storage"}
    assert response.status_code == 200, body
    assert body["status"] == "ready"


def test_readyz_says_which_dependency_is_down(anonymous, db, settings, monkeypatch):
    monkeypatch.setenv("POSTTRAIN_STORAGE_URL", "ftp://nowhere")
    response = anonymous.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["storage"].startswith("error: ConfigError")
    assert response.json()["checks"]["database"] == "ok"


def test_metrics_count_jobs_by_status_and_pool_and_requests_by_route(alice, anonymous,
                                                                     processed_file):
    from tests.api.test_jobs_api import create

    assert create(alice, processed_file(alice)).status_code == 200
    alice.client.get("/v1/fine_tuning/jobs")
    text = anonymous.get("/metrics").content.decode()
    assert 'posttrain_jobs{pool="cpu",status="queued"} 1.0' in text
    assert "posttrain_queue_depth" in text
    assert ('posttrain_http_request_duration_seconds_count{method="GET",'
            'route="/v1/fine_tuning/jobs",status="200"}') in text


def test_metrics_can_require_a_token(anonymous, settings, db):
    settings.METRICS_TOKEN = "s3cret"
    assert anonymous.get("/metrics").status_code == 401
    assert anonymous.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret").status_code == 200


def test_every_response_carries_a_request_id(alice):
    response = alice.client.get("/v1/files", HTTP_X_REQUEST_ID="trace-123")
    assert response["x-request-id"] == "trace-123"
    generated = alice.client.get("/v1/files")["x-request-id"]
    assert generated.startswith("req_") and generated != "trace-123"


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_log_records_carry_request_and_job_ids(fmt, monkeypatch, capsys):
    monkeypatch.setenv("POSTTRAIN_LOG_FORMAT", fmt)
    config = logcontext.logging_config()
    handler_config = config["handlers"]["console"]
    formatter = logging.config.DictConfigurator(config).configure_formatter(
        config["formatters"]["main"])
    record = logging.LogRecord("posttrain.test", logging.INFO, __file__, 1, "hello", None, None)
    request_token = logcontext.request_id.set("req_1")
    job_token = logcontext.job_id.set("ftjob-abc")
    try:
        logcontext.ContextFilter().filter(record)
    finally:
        logcontext.request_id.reset(request_token)
        logcontext.job_id.reset(job_token)
    line = formatter.format(record)
    assert handler_config["filters"] == ["context"]
    if fmt == "json":
        data = json.loads(line)
        assert (data["message"], data["request_id"], data["job_id"]) == (
            "hello", "req_1", "ftjob-abc")
        assert data["level"] == "INFO"
    else:
        assert "[req_1 ftjob-abc] hello" in line
