"""A training worker's presence heartbeat: what it says, and how the platform records it."""

from __future__ import annotations

from posttrain_server.pools.models import TrainingWorker
from posttrain_server.pools.services import worker_heartbeat_record
from workers import contract
from workers.presence import Presence


def test_a_worker_announces_its_pool_host_devices_and_current_job(monkeypatch):
    monkeypatch.setenv("POSTTRAIN_WORKER_DEVICES", "4")
    sent: list[contract.WorkerHeartbeat] = []
    presence = Presence("rubin", sent.append)

    presence.beat()
    presence.set_job("ftjob-abc")
    presence.beat()

    assert [beat.current_job for beat in sent] == [None, "ftjob-abc"]
    assert sent[0].pool == "rubin" and sent[0].devices == 4
    assert sent[0].worker.startswith("train.rubin@")
    # Both sides parse it with the same contract; unknown fields are ignored.
    again = contract.WorkerHeartbeat.model_validate({**sent[1].model_dump(), "future": 1})
    assert again == sent[1]


def test_a_heartbeat_that_cannot_be_sent_never_stops_the_worker():
    def broken(_: contract.WorkerHeartbeat) -> None:
        raise ConnectionError("broker restarting")

    Presence("cpu", broken).beat()  # logs a warning, raises nothing


def test_the_platform_keeps_one_row_per_worker_with_its_latest_state(db):
    presence = Presence("cpu", lambda beat: None)
    worker_heartbeat_record(beat=presence.message())
    presence.set_job("ftjob-1")
    worker_heartbeat_record(beat=presence.message())

    worker = TrainingWorker.objects.get()
    assert worker.current_job == "ftjob-1" and worker.pool == "cpu"
