"""Replaying usage messages any number of times, in any order, changes nothing."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from posttrain_server.billing.models import UsageKind, UsageRecord
from posttrain_server.billing.services import usage_record, usage_totals


def messages(jobs) -> list[tuple]:
    """Usage of three jobs: two attempts each, every kind, a few segments."""
    out = []
    for n, job in enumerate(jobs):
        for attempt in (1, 2):
            out += [
                (job, attempt, UsageKind.TRAINED_TOKENS, "final", Decimal(1000 * (n + attempt))),
                (job, attempt, UsageKind.DEVICE_SECONDS, "final", Decimal("12.345")),
                (job, attempt, UsageKind.EVAL_TOKENS, "before", Decimal(77)),
                (job, attempt, UsageKind.EVAL_TOKENS, "after", Decimal(78)),
                (job, attempt, UsageKind.ROLLOUT_TOKENS, "step-10", Decimal(500)),
                (job, attempt, UsageKind.ROLLOUT_TOKENS, "step-20", Decimal(501)),
            ]
    return out


def apply_all(batch) -> None:
    for job, attempt, kind, segment, quantity in batch:
        usage_record(job=job, attempt=attempt, kind=kind, quantity=quantity, segment=segment)


def snapshot(jobs) -> dict:
    return {job.id: usage_totals(job=job) for job in jobs}


@pytest.mark.parametrize("seed", range(5))
def test_each_message_delivered_one_to_five_times_shuffled_gives_identical_totals(
        alice, make_job, seed):
    jobs = [make_job(alice.organization) for _ in range(3)]
    once = messages(jobs)
    apply_all(once)
    expected = snapshot(jobs)
    rows = UsageRecord.objects.count()
    UsageRecord.objects.all().delete()

    rng = random.Random(seed)
    replay = [message for message in once for _ in range(rng.randint(1, 5))]
    rng.shuffle(replay)
    apply_all(replay)

    assert snapshot(jobs) == expected
    assert UsageRecord.objects.count() == rows == len(once)
    assert expected[jobs[0].id][UsageKind.EVAL_TOKENS] == Decimal(310)


def test_a_replay_with_a_different_quantity_keeps_the_first_one(alice, make_job):
    job = make_job(alice.organization)

    assert usage_record(job=job, attempt=1, kind=UsageKind.TRAINED_TOKENS, quantity=Decimal(5))
    assert not usage_record(job=job, attempt=1, kind=UsageKind.TRAINED_TOKENS,
                            quantity=Decimal(6))

    assert usage_totals(job=job)[UsageKind.TRAINED_TOKENS] == Decimal(5)
