"""The job state machine: an explicit table of every legal move, and the conditional UPDATE."""

from __future__ import annotations

import itertools

import pytest

from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.jobs.state_machine import (
    ACTIVE,
    ATTEMPT_TRANSITIONS,
    JOB_TRANSITIONS,
    TERMINAL,
    AttemptStatus,
    JobStatus,
    can_move,
    job_transition,
    sources,
)

V, Q, R, PG, PD, S, F, C = ("validating_files", "queued", "running", "pausing", "paused",
                            "succeeded", "failed", "cancelled")

# Written out by hand from the documented lifecycle; every pair not listed is illegal.
EXPECTED_JOB_MOVES: dict[str, set[str]] = {
    V: {Q, F, C},
    Q: {R, PG, PD, F, C},  # queued -> paused: paused before a worker claimed it
    # running -> queued: the reaper re-queues a lost attempt; running -> paused: max_cost hit
    R: {S, F, C, Q, PG, PD},
    PG: {PD, S, F, C},
    PD: {Q, C},
    S: set(),
    F: set(),
    C: set(),
}

EXPECTED_ATTEMPT_MOVES: dict[str, set[str]] = {
    "dispatched": {"running", "cancelled", "lost"},
    "running": {"succeeded", "failed", "cancelled", "lost", "preempted", "paused"},
    "succeeded": set(),
    "paused": set(),
    "failed": set(),
    "cancelled": set(),
    "lost": set(),
    "preempted": set(),
}


def test_the_expected_table_names_every_job_status():
    assert set(EXPECTED_JOB_MOVES) == set(JobStatus.values)
    assert set(JOB_TRANSITIONS) == set(JobStatus.values)


@pytest.mark.parametrize(("current", "target"),
                         list(itertools.product(JobStatus.values, repeat=2)))
def test_can_move_matches_the_table_for_every_pair_of_job_statuses(current, target):
    assert can_move(JOB_TRANSITIONS, current, target) == (target in EXPECTED_JOB_MOVES[current])


@pytest.mark.parametrize(("current", "target"),
                         list(itertools.product(AttemptStatus.values, repeat=2)))
def test_can_move_matches_the_table_for_every_pair_of_attempt_statuses(current, target):
    assert can_move(ATTEMPT_TRANSITIONS, current, target) == (
        target in EXPECTED_ATTEMPT_MOVES[current])


def test_terminal_statuses_have_no_exits_and_active_ones_are_the_rest():
    assert set(TERMINAL) == {S, F, C}
    assert set(ACTIVE) == {V, Q, R, PG, PD}
    for status in TERMINAL:
        assert JOB_TRANSITIONS[status] == frozenset()


def test_no_status_moves_to_itself():
    for status in JobStatus.values:
        assert not can_move(JOB_TRANSITIONS, status, status)


def test_an_unknown_status_has_no_moves():
    assert not can_move(JOB_TRANSITIONS, "exploded", Q)


def test_sources_are_the_inverse_of_the_table():
    assert sources(JOB_TRANSITIONS, Q) == {V, R, PD}
    assert sources(JOB_TRANSITIONS, R) == {Q}
    assert sources(JOB_TRANSITIONS, V) == set()


@pytest.mark.parametrize("current", JobStatus.values)
def test_job_transition_moves_only_from_an_allowed_status(alice, make_job, current):
    job = make_job(alice.organization)
    for target in JobStatus.values:
        FineTuningJob.objects.filter(id=job.id).update(status=current, finished_at=None)

        moved = job_transition(job.id, JobStatus(target))

        job.refresh_from_db()
        allowed = target in EXPECTED_JOB_MOVES[current]
        assert moved is allowed, (current, target)
        assert job.status == (target if allowed else current), (current, target)
        if allowed and target in TERMINAL:
            assert job.finished_at is not None
        else:
            assert job.finished_at is None


def test_job_transition_respects_only_from(alice, make_job):
    job = make_job(alice.organization)
    FineTuningJob.objects.filter(id=job.id).update(status=R)

    # running -> cancelled is legal, but this caller only cancels jobs that never started
    assert not job_transition(job.id, JobStatus.CANCELLED, only_from={Q, PD})
    job.refresh_from_db()
    assert job.status == R

    assert job_transition(job.id, JobStatus.CANCELLED, only_from={R})
    job.refresh_from_db()
    assert job.status == C


def test_job_transition_writes_the_given_fields_only_when_it_moves(alice, make_job):
    job = make_job(alice.organization)
    error = {"code": "boom", "param": None, "message": "it broke"}

    assert job_transition(job.id, JobStatus.FAILED, error=error)
    assert not job_transition(job.id, JobStatus.FAILED, error={"code": "other"})

    job.refresh_from_db()
    assert job.error == error


@pytest.mark.parametrize("terminal", [S, F, C])
def test_a_terminal_job_never_changes(alice, make_job, terminal):
    job = make_job(alice.organization)
    FineTuningJob.objects.filter(id=job.id).update(status=R)
    assert job_transition(job.id, JobStatus(terminal))
    job.refresh_from_db()
    finished_at = job.finished_at

    for target in JobStatus.values:
        assert not job_transition(job.id, JobStatus(target))

    job.refresh_from_db()
    assert job.status == terminal
    assert job.finished_at == finished_at


def test_only_one_of_two_racing_moves_wins(alice, make_job):
    job = make_job(alice.organization)
    FineTuningJob.objects.filter(id=job.id).update(status=R)

    results = [job_transition(job.id, JobStatus.SUCCEEDED),
               job_transition(job.id, JobStatus.CANCELLED)]

    assert results == [True, False]
    job.refresh_from_db()
    assert job.status == S


def test_job_transition_on_an_unknown_job_moves_nothing(db):
    assert job_transition("ftjob-doesnotexist", JobStatus.CANCELLED) is False
