"""The reaper (lost leases are retried, then failed) and exactly-once worker events."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from posttrain_server.billing import prices
from posttrain_server.billing.models import UsageRecord
from posttrain_server.jobs.models import Attempt, Checkpoint, FineTuningJob, JobEvent
from posttrain_server.jobs.services import event_apply, reap
from workers import contract

LEASE = 60


@pytest.fixture(autouse=True)
def lease_settings(settings):
    settings.LEASE_TIMEOUT_S = LEASE
    settings.MAX_ATTEMPTS = 3
    settings.DISPATCH_TIMEOUT_S = 600
    return settings


def worker_event(job, *, attempt: int = 1, seq: int, type_: str, data: dict,
                 message: str = "worker says") -> contract.JobEvent:
    return contract.JobEvent(job_id=job.id, attempt=attempt, seq=seq, type=type_,
                             message=message, data=data, created_at=time.time())


def report_checkpoint(job, *, attempt: int = 1, seq: int, step: int, tokens: int) -> None:
    data = contract.CheckpointData(step=step, key=f"jobs/{job.id}/checkpoints/step-{step}.tar",
                                   trained_tokens=tokens, metrics={"train_loss": 1.0})
    assert event_apply(event=worker_event(job, attempt=attempt, seq=seq, type_="checkpoint",
                                          data=data.model_dump()))


def report_tokens(job, *, attempt: int = 1, seq: int, tokens: int) -> None:
    assert event_apply(event=worker_event(
        job, attempt=attempt, seq=seq, type_="metrics",
        data={"step": 1, "train_loss": 1.0, "trained_tokens": tokens,
              "attempt_trained_tokens": tokens}))


def finished(job, *, attempt: int = 1, seq: int = 100, **data) -> contract.JobEvent:
    result = contract.FinishedData(**{"status": "succeeded", "trained_tokens": 1_000_000,
                                      "device_seconds": 3600.0, "steps": 10,
                                      "adapter_key": f"jobs/{job.id}/model.tar",
                                      "adapter_kind": "lora", **data})
    return worker_event(job, attempt=attempt, seq=seq, type_="finished",
                        data=result.model_dump(), message="done")


def usage(job, attempt: int | None = None) -> dict[str, Decimal]:
    rows = UsageRecord.objects.filter(job=job)
    if attempt is not None:
        rows = rows.filter(attempt=attempt)
    return {row.kind: row.quantity for row in rows}


def lost_attempt(job, claim_attempt, *, now, number: int = 1, ran_s: float = 480,
                 silent_s: float = 120, tokens: int = 0):
    """Attempt ``number`` claimed ``ran_s + silent_s`` ago, last heartbeat ``silent_s`` ago."""
    heartbeat = now - timedelta(seconds=silent_s)
    attempt = claim_attempt(job, number=number, claimed_at=heartbeat - timedelta(seconds=ran_s),
                            heartbeat_at=heartbeat)
    if tokens:
        report_tokens(job, attempt=number, seq=1, tokens=tokens)
    return attempt


def test_a_silent_attempt_is_lost_billed_and_retried_from_the_latest_checkpoint(
        alice, make_job, claim_attempt, django_capture_on_commit_callbacks):
    now = timezone.now()
    job = make_job(alice.organization)
    first = lost_attempt(job, claim_attempt, now=now, ran_s=480, silent_s=LEASE + 1)
    report_checkpoint(job, seq=2, step=20, tokens=2_000)
    report_checkpoint(job, seq=3, step=40, tokens=4_000)
    report_checkpoint(job, seq=4, step=10, tokens=1_000)  # out of order: step, not time, wins
    report_tokens(job, seq=5, tokens=5_000)

    with django_capture_on_commit_callbacks() as dispatched:
        counts = reap(now=now)

    assert counts == {"lost": 1, "redispatched": 0}
    first.refresh_from_db()
    assert first.status == "lost"
    assert first.finished_at == now
    assert usage(job, attempt=1) == {"trained_tokens": Decimal(5_000),
                                     "device_seconds": Decimal("480.000")}
    retry = Attempt.objects.get(job=job, number=2)
    assert retry.status == "dispatched"
    assert retry.resume_from_key == f"jobs/{job.id}/checkpoints/step-40.tar"
    assert retry.resume_trained_tokens == 4_000
    assert retry.dispatched_at == now
    assert retry.token_hash != first.token_hash
    assert Attempt.objects.filter(job=job).count() == 2
    job.refresh_from_db()
    assert job.status == "queued"
    assert job.finished_at is None
    warning = JobEvent.objects.get(job=job, level="warn", message__startswith="Attempt")
    assert warning.message == ("Attempt 1 stopped heartbeating; retrying as attempt 2 "
                               "from step 40")
    assert len(dispatched) == 1


def test_a_lost_attempt_without_checkpoints_restarts_from_the_beginning(
        alice, make_job, claim_attempt):
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now)

    reap(now=now)

    retry = Attempt.objects.get(job=job, number=2)
    assert retry.resume_from_key == ""
    assert retry.resume_trained_tokens == 0
    assert JobEvent.objects.filter(job=job, level="warn",
                                   message__endswith="from the start").count() == 1


def test_after_max_attempts_the_job_fails_with_worker_lost_and_is_billed(
        alice, make_job, claim_attempt, settings, django_capture_on_commit_callbacks):
    settings.MAX_ATTEMPTS = 2
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now - timedelta(hours=2), ran_s=1800, tokens=600_000)
    assert reap(now=now - timedelta(hours=2)) == {"lost": 1, "redispatched": 0}
    lost_attempt(job, claim_attempt, now=now, number=2, ran_s=1800, tokens=400_000)

    with django_capture_on_commit_callbacks() as dispatched:
        counts = reap(now=now)

    assert counts == {"lost": 1, "redispatched": 0}
    assert dispatched == []
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.finished_at is not None
    assert job.error["code"] == "worker_lost"
    assert "2 times" in job.error["message"]
    assert not Attempt.objects.filter(job=job, number=3).exists()
    assert list(Attempt.objects.filter(job=job).order_by("number")
                .values_list("status", flat=True)) == ["lost", "lost"]
    # 1M tiny tokens ($0.10) + 1 device-hour on cpu ($0.10), both attempts together
    assert job.device_seconds == Decimal("3600.000")
    assert job.cost_tokens == Decimal("0.100000")
    assert job.cost_compute == Decimal("0.100000")
    assert job.price_version == prices.PRICE_VERSION
    assert JobEvent.objects.filter(job=job, level="error").count() == 1


def test_with_one_allowed_attempt_the_first_loss_fails_the_job(
        alice, make_job, claim_attempt, settings):
    settings.MAX_ATTEMPTS = 1
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now)

    reap(now=now)

    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error["code"] == "worker_lost"
    assert Attempt.objects.filter(job=job).count() == 1


def test_a_lost_attempt_of_a_job_being_cancelled_cancels_it_instead_of_retrying(
        alice, make_job, claim_attempt):
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now)
    FineTuningJob.objects.filter(id=job.id).update(cancel_requested_at=now)

    reap(now=now)

    job.refresh_from_db()
    assert job.status == "cancelled"
    assert job.price_version == prices.PRICE_VERSION
    assert Attempt.objects.filter(job=job).count() == 1


@pytest.mark.parametrize("silent_s", [0, LEASE - 1, LEASE])
def test_a_recent_heartbeat_is_not_reaped(alice, make_job, claim_attempt, silent_s):
    now = timezone.now()
    job = make_job(alice.organization)
    attempt = lost_attempt(job, claim_attempt, now=now, silent_s=silent_s)

    assert reap(now=now) == {"lost": 0, "redispatched": 0}

    attempt.refresh_from_db()
    assert attempt.status == "running"
    job.refresh_from_db()
    assert job.status == "running"
    assert not UsageRecord.objects.filter(job=job).exists()
    assert Attempt.objects.filter(job=job).count() == 1


def test_reaping_twice_changes_nothing_the_second_time(
        alice, make_job, claim_attempt, django_capture_on_commit_callbacks):
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now, tokens=100)
    reap(now=now)
    before = (list(Attempt.objects.filter(job=job).order_by("number")
                   .values_list("number", "status", "token_hash", "dispatched_at")),
              UsageRecord.objects.count(), JobEvent.objects.filter(job=job).count())

    with django_capture_on_commit_callbacks() as dispatched:
        counts = reap(now=now + timedelta(seconds=1))

    assert counts == {"lost": 0, "redispatched": 0}
    assert dispatched == []
    after = (list(Attempt.objects.filter(job=job).order_by("number")
                  .values_list("number", "status", "token_hash", "dispatched_at")),
             UsageRecord.objects.count(), JobEvent.objects.filter(job=job).count())
    assert after == before
    job.refresh_from_db()
    assert job.status == "queued"


def test_an_unclaimed_attempt_is_sent_again_under_a_fresh_token(
        alice, make_job, django_capture_on_commit_callbacks):
    job = make_job(alice.organization)
    attempt = Attempt.objects.get(job=job, number=1)
    later = timezone.now() + timedelta(seconds=601)

    with django_capture_on_commit_callbacks() as dispatched:
        counts = reap(now=later)

    assert counts == {"lost": 0, "redispatched": 1}
    assert len(dispatched) == 1
    old_hash = attempt.token_hash
    attempt.refresh_from_db()
    assert attempt.token_hash != old_hash
    assert attempt.status == "dispatched"


# --- worker events, exactly once ------------------------------------------------------------

def test_a_finished_event_applied_twice_finishes_and_bills_the_job_once(
        alice, make_job, claim_attempt):
    job = make_job(alice.organization)
    claim_attempt(job)
    event = finished(job)

    assert event_apply(event=event) is True
    job.refresh_from_db()
    first_finish = job.finished_at
    assert event_apply(event=event) is False

    job.refresh_from_db()
    assert job.status == "succeeded"
    assert job.finished_at == first_finish
    assert job.trained_tokens == 1_000_000
    assert job.fine_tuned_model.startswith("ft:posttrain-tiny:alice::")
    assert job.adapter_key == f"jobs/{job.id}/model.tar"
    assert UsageRecord.objects.filter(job=job).count() == 2
    assert usage(job) == {"trained_tokens": Decimal(1_000_000),
                          "device_seconds": Decimal("3600.000")}
    assert job.cost_tokens == Decimal("0.100000")
    assert job.cost_compute == Decimal("0.100000")
    assert JobEvent.objects.filter(job=job, attempt=1, seq=100).count() == 1
    assert JobEvent.objects.filter(job=job,
                                   message="The job has successfully completed").count() == 1
    assert Attempt.objects.get(job=job, number=1).status == "succeeded"


def test_a_second_finished_event_with_another_seq_does_not_finish_or_bill_again(
        alice, make_job, claim_attempt):
    job = make_job(alice.organization)
    claim_attempt(job)
    assert event_apply(event=finished(job, seq=10))

    event_apply(event=finished(job, seq=11, status="failed", trained_tokens=5,
                               error={"code": "x", "message": "late"}))

    job.refresh_from_db()
    assert job.status == "succeeded"
    assert job.error is None
    assert UsageRecord.objects.filter(job=job).count() == 2


def test_a_finished_event_from_a_lost_attempt_changes_nothing(
        alice, make_job, claim_attempt):
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now, tokens=700)
    reap(now=now)
    usage_before = list(UsageRecord.objects.filter(job=job).order_by("id")
                        .values_list("attempt", "kind", "quantity"))

    event_apply(event=finished(job, attempt=1, seq=50))

    job.refresh_from_db()
    assert job.status == "queued"
    assert job.fine_tuned_model is None
    assert job.trained_tokens == 700
    assert job.cost_tokens == job.cost_compute == 0
    assert list(UsageRecord.objects.filter(job=job).order_by("id")
                .values_list("attempt", "kind", "quantity")) == usage_before
    assert Attempt.objects.get(job=job, number=1).status == "lost"
    assert Attempt.objects.get(job=job, number=2).status == "dispatched"
    ignored = JobEvent.objects.filter(job=job, level="warn",
                                      message__startswith="Ignored the result of attempt 1")
    assert ignored.count() == 1


def test_metrics_from_a_lost_attempt_do_not_touch_the_job(alice, make_job, claim_attempt):
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now)
    reap(now=now)

    event_apply(event=worker_event(job, seq=9, type_="metrics",
                                   data={"step": 99, "trained_tokens": 123,
                                         "attempt_trained_tokens": 123}))

    job.refresh_from_db()
    assert job.progress == {}
    assert Attempt.objects.get(job=job, number=1).reported_tokens == 0


def test_a_checkpoint_from_a_lost_attempt_is_not_a_resume_point(
        alice, make_job, claim_attempt):
    now = timezone.now()
    job = make_job(alice.organization)
    lost_attempt(job, claim_attempt, now=now)
    reap(now=now)

    report_checkpoint(job, attempt=1, seq=20, step=60, tokens=6_000)

    assert not Checkpoint.objects.filter(job=job).exists()


def test_events_for_an_unknown_job_or_attempt_are_dropped(alice, make_job):
    job = make_job(alice.organization)

    unknown_job = contract.JobEvent(job_id="ftjob-nope", attempt=1, seq=0, type="message",
                                    message="hi", created_at=time.time())
    assert event_apply(event=unknown_job) is False
    assert event_apply(event=worker_event(job, attempt=7, seq=0, type_="message",
                                          data={})) is False
    assert not JobEvent.objects.filter(job=job, attempt__isnull=False).exists()


def test_a_redelivered_message_event_is_stored_once(alice, make_job, claim_attempt):
    job = make_job(alice.organization)
    claim_attempt(job)
    event = worker_event(job, seq=3, type_="message", data={}, message="loading model")

    assert event_apply(event=event) is True
    assert event_apply(event=event) is False

    assert JobEvent.objects.filter(job=job, message="loading model").count() == 1
