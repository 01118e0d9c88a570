"""Platform-queue task: training workers' presence heartbeats."""

from celery import shared_task

from posttrain_server.pools.services import worker_heartbeat_record
from workers import contract


@shared_task(name=contract.WORKER_HEARTBEAT_TASK)
def record_worker_heartbeat(beat: dict) -> None:
    worker_heartbeat_record(beat=contract.WorkerHeartbeat.model_validate(beat))
