"""The SDK's base client against httpx's MockTransport: retries, idempotency keys, pagination,
error mapping, and the sync and async clients behaving the same."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest

import posttrain
from posttrain import AsyncPosttrain, Posttrain

Handler = Callable[[httpx.Request], httpx.Response]


def job_body(job_id: str = "ftjob-1", status: str = "queued", **extra: Any) -> dict[str, Any]:
    return {"id": job_id, "object": "fine_tuning.job", "created_at": 1_700_000_000,
            "status": status, "model": "posttrain-tiny", "training_file": "file-1",
            "cost": {"currency": "usd", "tokens": "0.065847", "compute": "0.003660",
                     "total": "0.069507", "price_version": "2026-11-01"},
            "usage": {"trained_tokens": 10, "device_seconds": "131.8", "devices": 1}, **extra}


def file_body(file_id: str = "file-1", status: str = "processed", **extra: Any
              ) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": 10, "created_at": 1_700_000_000,
            "filename": "train.jsonl", "purpose": "fine-tune", "status": status, **extra}


def error_body(message: str, code: str | None = None, param: str | None = None
               ) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": code}}


class Recorder:
    """A MockTransport handler that answers from a script and records every request."""

    def __init__(self, *responses: httpx.Response | Exception | Handler) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer) and not isinstance(answer, httpx.Response):
            return answer(request)
        return answer


def make_client(recorder: Recorder, **kwargs: Any) -> tuple[Posttrain, list[float]]:
    client = Posttrain(api_key="sk-test", base_url="http://posttrain.test/v1",
                       http_client=httpx.Client(transport=httpx.MockTransport(recorder)),
                       **kwargs)
    sleeps: list[float] = []
    client._sleep = sleeps.append  # record the delays instead of waiting them out
    return client, sleeps


def make_async_client(recorder: Recorder, **kwargs: Any) -> tuple[AsyncPosttrain, list[float]]:
    client = AsyncPosttrain(api_key="sk-test", base_url="http://posttrain.test/v1",
                            http_client=httpx.AsyncClient(
                                transport=httpx.MockTransport(recorder)), **kwargs)
    sleeps: list[float] = []

    async def record(seconds: float) -> None:
        sleeps.append(seconds)

    client._sleep = record
    return client, sleeps


# --- configuration ----------------------------------------------------------------------------

def test_it_reads_the_key_and_base_url_from_the_environment(monkeypatch):
    monkeypatch.setenv("POSTTRAIN_API_KEY", "sk-env")
    monkeypatch.setenv("POSTTRAIN_BASE_URL", "https://train.example.com/v1")
    recorder = Recorder(httpx.Response(200, json=job_body()))
    client = Posttrain(http_client=httpx.Client(transport=httpx.MockTransport(recorder)))

    client.fine_tuning.jobs.retrieve("ftjob-1")

    request = recorder.requests[0]
    assert str(request.url) == "https://train.example.com/v1/fine_tuning/jobs/ftjob-1"
    assert request.headers["authorization"] == "Bearer sk-env"
    assert request.headers["user-agent"].startswith("posttrain-python/")


def test_it_refuses_to_start_without_an_api_key(monkeypatch):
    monkeypatch.delenv("POSTTRAIN_API_KEY", raising=False)
    with pytest.raises(posttrain.ConfigurationError, match="POSTTRAIN_API_KEY"):
        Posttrain()


# --- retries ----------------------------------------------------------------------------------

@pytest.mark.parametrize("status", [408, 429, 500, 502, 503])
def test_it_retries_retryable_statuses_twice_then_raises(status):
    recorder = Recorder(httpx.Response(status, json=error_body("busy")))
    client, sleeps = make_client(recorder)

    with pytest.raises(posttrain.APIStatusError) as raised:
        client.fine_tuning.jobs.retrieve("ftjob-1")

    assert len(recorder.requests) == 3  # the first try and 2 retries
    assert len(sleeps) == 2
    assert raised.value.status_code == status


def test_a_retry_that_succeeds_returns_the_result():
    recorder = Recorder(httpx.Response(503), httpx.Response(200, json=job_body()))
    client, sleeps = make_client(recorder)

    job = client.fine_tuning.jobs.retrieve("ftjob-1")

    assert job.id == "ftjob-1"
    assert len(recorder.requests) == 2 and len(sleeps) == 1


def test_backoff_grows_and_has_jitter():
    recorder = Recorder(httpx.Response(500))
    client, sleeps = make_client(recorder, max_retries=4)

    with pytest.raises(posttrain.InternalServerError):
        client.models.list()

    assert len(sleeps) == 4
    for attempt, delay in enumerate(sleeps):
        base = min(0.5 * 2**attempt, 8.0)
        assert 0.75 * base <= delay <= base


def test_it_honours_retry_after_seconds_and_milliseconds():
    recorder = Recorder(httpx.Response(429, headers={"retry-after": "3"}),
                        httpx.Response(429, headers={"retry-after-ms": "250"}),
                        httpx.Response(200, json=job_body()))
    client, sleeps = make_client(recorder)

    client.fine_tuning.jobs.retrieve("ftjob-1")

    assert sleeps == [3.0, 0.25]


def test_it_honours_retry_after_as_an_http_date():
    when = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: no wait is better than backoff
    recorder = Recorder(httpx.Response(503, headers={"retry-after": when}),
                        httpx.Response(200, json=job_body()))
    client, sleeps = make_client(recorder)

    client.fine_tuning.jobs.retrieve("ftjob-1")

    assert len(sleeps) == 1 and sleeps[0] <= 0.5  # an absurd date falls back to backoff


def test_x_should_retry_false_stops_retries_and_true_forces_them():
    refused = Recorder(httpx.Response(503, headers={"x-should-retry": "false"}))
    client, sleeps = make_client(refused)
    with pytest.raises(posttrain.InternalServerError):
        client.fine_tuning.jobs.retrieve("ftjob-1")
    assert len(refused.requests) == 1 and sleeps == []

    forced = Recorder(httpx.Response(409, headers={"x-should-retry": "true"},
                                     json=error_body("locked")),
                      httpx.Response(200, json=job_body()))
    client, sleeps = make_client(forced)
    assert client.fine_tuning.jobs.retrieve("ftjob-1").id == "ftjob-1"
    assert len(forced.requests) == 2


def test_client_errors_are_not_retried():
    recorder = Recorder(httpx.Response(400, json=error_body("bad", "invalid_value", "seed")))
    client, sleeps = make_client(recorder)

    with pytest.raises(posttrain.BadRequestError):
        client.fine_tuning.jobs.create(model="posttrain-tiny", training_file="file-1", seed=-1)

    assert len(recorder.requests) == 1 and sleeps == []


def test_connection_errors_and_timeouts_are_retried_then_raised():
    recorder = Recorder(httpx.ConnectError("refused"))
    client, sleeps = make_client(recorder)
    with pytest.raises(posttrain.APIConnectionError) as raised:
        client.files.retrieve("file-1")
    assert len(recorder.requests) == 3 and len(sleeps) == 2
    assert isinstance(raised.value.__cause__, httpx.ConnectError)

    recorder = Recorder(httpx.ReadTimeout("slow"), httpx.Response(200, json=file_body()))
    client, _ = make_client(recorder)
    assert client.files.retrieve("file-1").id == "file-1"

    recorder = Recorder(httpx.ReadTimeout("slow"))
    client, _ = make_client(recorder, max_retries=0)
    with pytest.raises(posttrain.APITimeoutError):
        client.files.retrieve("file-1")
    assert len(recorder.requests) == 1


# --- idempotency keys ---------------------------------------------------------------------------

def test_a_post_reuses_its_idempotency_key_across_retries():
    recorder = Recorder(httpx.ConnectError("reset"), httpx.Response(502),
                        httpx.Response(200, json=job_body()))
    client, _ = make_client(recorder)

    client.fine_tuning.jobs.create(model="posttrain-tiny", training_file="file-1")

    keys = [request.headers.get("idempotency-key") for request in recorder.requests]
    assert len(keys) == 3
    assert keys[0] and keys[0].startswith("posttrain-")
    assert len(set(keys)) == 1
    bodies = [json.loads(request.content) for request in recorder.requests]
    assert all(body == bodies[0] for body in bodies)


def test_each_post_call_gets_its_own_key_and_gets_carry_none():
    recorder = Recorder(lambda request: httpx.Response(200, json=job_body()))
    client, _ = make_client(recorder)

    client.fine_tuning.jobs.create(model="posttrain-tiny", training_file="file-1")
    client.fine_tuning.jobs.create(model="posttrain-tiny", training_file="file-1")
    client.fine_tuning.jobs.cancel("ftjob-1")
    client.fine_tuning.jobs.retrieve("ftjob-1")

    keys = [request.headers.get("idempotency-key") for request in recorder.requests]
    assert None not in keys[:3] and len(set(keys[:3])) == 3
    assert keys[3] is None


def test_a_caller_can_choose_the_idempotency_key():
    recorder = Recorder(httpx.Response(200, json=job_body()))
    client, _ = make_client(recorder)

    client.fine_tuning.jobs.create(model="posttrain-tiny", training_file="file-1",
                                   idempotency_key="nightly-2026-11-29")

    assert recorder.requests[0].headers["idempotency-key"] == "nightly-2026-11-29"


def test_an_upload_resends_the_whole_file_with_the_same_key(tmp_path):
    dataset = tmp_path / "train.jsonl"
    dataset.write_bytes(b'{"messages": []}\n' * 50)
    recorder = Recorder(httpx.Response(500), httpx.Response(200, json=file_body()))
    client, _ = make_client(recorder)

    client.files.upload(dataset, wait=False)

    first, second = recorder.requests
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    assert dataset.read_bytes() in first.content and dataset.read_bytes() in second.content


# --- error mapping --------------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "cls"), [
    (400, posttrain.BadRequestError), (401, posttrain.AuthenticationError),
    (403, posttrain.PermissionDeniedError), (404, posttrain.NotFoundError),
    (409, posttrain.ConflictError), (413, posttrain.PayloadTooLargeError),
    (422, posttrain.UnprocessableEntityError), (429, posttrain.RateLimitError),
    (500, posttrain.InternalServerError), (503, posttrain.InternalServerError),
])
def test_each_status_raises_its_own_class_with_openais_fields(status, cls):
    recorder = Recorder(httpx.Response(status, headers={"x-request-id": "req_abc"},
                                       json=error_body("it went wrong", "some_code", "model")))
    client, _ = make_client(recorder, max_retries=0)

    with pytest.raises(cls) as raised:
        client.fine_tuning.jobs.retrieve("ftjob-1")

    error = raised.value
    assert isinstance(error, posttrain.APIStatusError)
    assert error.status_code == status
    assert error.request_id == "req_abc"
    assert (error.message, error.type, error.param, error.code) == (
        "it went wrong", "invalid_request_error", "model", "some_code")
    assert "req_abc" in str(error) and "some_code" in str(error)


def test_a_non_json_error_body_still_maps_to_its_class():
    recorder = Recorder(httpx.Response(502, text="<html>Bad Gateway</html>"))
    client, _ = make_client(recorder, max_retries=0)

    with pytest.raises(posttrain.InternalServerError) as raised:
        client.models.list()

    assert raised.value.code is None and "Bad Gateway" in raised.value.message


# --- pagination ---------------------------------------------------------------------------------

def paged(items: list[str], page_size: int, make: Callable[[str], dict[str, Any]]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        after = request.url.params.get("after")
        start = items.index(after) + 1 if after else 0
        chunk = items[start:start + page_size]
        return httpx.Response(200, json={
            "object": "list", "data": [make(item) for item in chunk],
            "has_more": start + page_size < len(items),
            "first_id": chunk[0] if chunk else None, "last_id": chunk[-1] if chunk else None})
    return handler


def test_list_iterates_every_page_following_after():
    ids = [f"ftjob-{n}" for n in range(7)]
    recorder = Recorder(paged(ids, 3, job_body))
    client, _ = make_client(recorder)

    pager = client.fine_tuning.jobs.list(limit=3, metadata={"team": "search"})
    assert len(recorder.requests) == 1  # the first page is fetched at the call

    assert [job.id for job in pager] == ids
    afters = [request.url.params.get("after") for request in recorder.requests]
    assert afters == [None, "ftjob-2", "ftjob-5"]
    assert all(request.url.params["metadata[team]"] == "search"
               for request in recorder.requests)
    assert pager.has_more and len(pager.data) == 3


def test_an_empty_list_makes_one_request():
    recorder = Recorder(paged([], 3, file_body))
    client, _ = make_client(recorder)

    assert list(client.files.list()) == []
    assert len(recorder.requests) == 1


def test_events_page_oldest_first_by_default():
    ids = [f"ftevent-{n}" for n in range(5)]
    def make(event_id: str) -> dict[str, Any]:
        return {"id": event_id, "created_at": 1, "level": "info", "message": event_id,
                "type": "message"}

    recorder = Recorder(paged(ids, 2, make))
    client, _ = make_client(recorder)

    assert [event.id for event in client.fine_tuning.jobs.events("ftjob-1")] == ids
    assert {request.url.params["order"] for request in recorder.requests} == {"asc"}


def test_follow_polls_until_the_job_ends_and_drains_the_last_events():
    state = {"polls": 0}
    events = [{"id": f"ftevent-{n}", "created_at": n, "level": "info", "message": f"m{n}",
               "type": "message"} for n in range(4)]
    visible = {"count": 1}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/events"):
            after = request.url.params.get("after")
            start = next(i for i, e in enumerate(events) if e["id"] == after) + 1 if after else 0
            return httpx.Response(200, json={"object": "list", "has_more": False,
                                             "data": events[start:visible["count"]]})
        state["polls"] += 1
        visible["count"] = min(4, visible["count"] + 1)
        status = "succeeded" if state["polls"] >= 3 else "running"
        return httpx.Response(200, json=job_body(status=status))

    client, sleeps = make_client(Recorder(handler))

    seen = [event.message for event in client.fine_tuning.jobs.events("ftjob-1", follow=True)]

    assert seen == ["m0", "m1", "m2", "m3"]  # each once, in order, the last after the end
    assert state["polls"] == 3 and len(sleeps) == 2


# --- files and jobs helpers ---------------------------------------------------------------------

def test_upload_waits_for_validation_and_raises_with_line_numbers(tmp_path):
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text("{}\n")
    report = {"format": None, "line_count": 1, "example_count": 0, "error_count": 2,
              "errors": [{"line": 1, "message": "unknown format"},
                         {"line": None, "message": "needs at least 10 examples"}]}
    recorder = Recorder(httpx.Response(200, json=file_body(status="uploaded")),
                        httpx.Response(200, json=file_body(status="uploaded")),
                        httpx.Response(200, json=file_body(
                            status="error", status_details="line 1: unknown format",
                            validation=report)))
    client, sleeps = make_client(recorder)

    with pytest.raises(posttrain.FileValidationError) as raised:
        client.files.upload(dataset)

    assert raised.value.errors[0] == {"line": 1, "message": "unknown format"}
    assert raised.value.error_count == 2
    assert "line 1: unknown format" in str(raised.value)
    assert len(sleeps) == 1


def test_wait_returns_the_terminal_job_and_reports_progress():
    progress = {"step": 5, "total_steps": 10, "train_loss": 1.25, "elapsed_s": 3.0}
    recorder = Recorder(httpx.Response(200, json=job_body(status="queued")),
                        httpx.Response(200, json=job_body(status="running", progress=progress)),
                        httpx.Response(200, json=job_body(status="failed", error={
                            "message": "out of memory", "code": "oom"})))
    client, sleeps = make_client(recorder)
    seen: list[str] = []

    job = client.fine_tuning.jobs.wait("ftjob-1", progress=lambda j: seen.append(j.status))

    assert job.status == "failed" and job.error.code == "oom"
    assert seen == ["queued", "running", "failed"]
    assert sleeps == [1.0, 1.0]


def test_wait_gives_up_after_its_timeout():
    recorder = Recorder(httpx.Response(200, json=job_body(status="running")))
    client, _ = make_client(recorder)

    with pytest.raises(posttrain.WaitTimeoutError):
        client.fine_tuning.jobs.wait("ftjob-1", timeout=0)


def test_money_is_decimal_and_serialises_back_to_decimal_strings():
    recorder = Recorder(httpx.Response(200, json=job_body()))
    client, _ = make_client(recorder)

    job = client.fine_tuning.jobs.retrieve("ftjob-1")

    assert job.cost.total == Decimal("0.069507")
    assert job.cost.tokens + job.cost.compute == job.cost.total
    assert job.usage.device_seconds == Decimal("131.8")
    assert job.model_dump(mode="json")["cost"]["total"] == "0.069507"


def test_unknown_fields_from_a_newer_server_are_kept():
    recorder = Recorder(httpx.Response(200, json=job_body(budget_usd="5.00")))
    client, _ = make_client(recorder)

    assert client.fine_tuning.jobs.retrieve("ftjob-1").model_extra["budget_usd"] == "5.00"


def test_ids_are_quoted_into_the_path():
    recorder = Recorder(httpx.Response(200, json={"id": "ft:posttrain-tiny:acme:x:1",
                                                  "object": "model", "created": 1,
                                                  "owned_by": "org"}))
    client, _ = make_client(recorder)

    client.models.retrieve("ft:posttrain-tiny:acme:x:1")

    assert recorder.requests[0].url.raw_path == b"/v1/models/ft:posttrain-tiny:acme:x:1"
    with pytest.raises(ValueError, match="empty"):
        client.files.retrieve("")


# --- the async client: same plans, other I/O -----------------------------------------------------

def test_the_async_client_retries_with_one_idempotency_key_and_paginates():
    async def scenario() -> None:
        recorder = Recorder(httpx.Response(503), httpx.Response(200, json=job_body()))
        client, sleeps = make_async_client(recorder)
        job = await client.fine_tuning.jobs.create(model="posttrain-tiny",
                                                   training_file="file-1")
        assert job.cost.total == Decimal("0.069507")
        keys = {request.headers["idempotency-key"] for request in recorder.requests}
        assert len(recorder.requests) == 2 and len(keys) == 1 and len(sleeps) == 1

        ids = [f"file-{n}" for n in range(5)]
        client, _ = make_async_client(Recorder(paged(ids, 2, file_body)))
        assert [file.id async for file in client.files.list(limit=2)] == ids

        client, _ = make_async_client(Recorder(httpx.Response(
            404, headers={"x-request-id": "req_1"}, json=error_body("no such job"))))
        with pytest.raises(posttrain.NotFoundError) as raised:
            await client.fine_tuning.jobs.retrieve("ftjob-x")
        assert raised.value.request_id == "req_1"

        recorder = Recorder(httpx.Response(200, json=job_body(status="running")),
                            httpx.Response(200, json=job_body(status="succeeded")))
        client, sleeps = make_async_client(recorder)
        job = await client.fine_tuning.jobs.wait("ftjob-1", poll_interval=0.1)
        assert job.status == "succeeded" and sleeps == [0.1]
        await client.close()

    asyncio.run(scenario())


def test_a_body_the_types_cannot_read_raises_a_response_validation_error():
    recorder = Recorder(httpx.Response(200, headers={"x-request-id": "req_9"},
                                       json={"id": "ftjob-1", "status": "queued"}))
    client, _ = make_client(recorder)

    with pytest.raises(posttrain.APIResponseValidationError) as raised:
        client.fine_tuning.jobs.retrieve("ftjob-1")

    assert raised.value.request_id == "req_9"
    assert raised.value.body == {"id": "ftjob-1", "status": "queued"}


def test_the_plain_progress_line_shows_step_loss_eta_and_the_final_cost(capsys):
    from posttrain._progress import TextReporter
    from posttrain.types import FineTuningJob

    reporter = TextReporter()
    running = FineTuningJob.model_validate(job_body(
        status="running", estimated_finish=4_000_000_000,
        progress={"step": 5, "total_steps": 15, "train_loss": 1.23456}))
    reporter.update(running)
    reporter.update(running)  # unchanged: not printed twice
    reporter.update(FineTuningJob.model_validate(job_body(status="succeeded")))

    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert "running step 5/15 loss 1.2346 eta " in lines[0]
    assert lines[1].endswith("succeeded cost $0.069507")
