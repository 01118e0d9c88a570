"""GPU pools (configured in the admin) and the training workers serving them."""

from __future__ import annotations

from django.db import models

from workers.contract import train_queue


class Pool(models.Model):
    """A named set of workers on one accelerator kind, fed by the queue ``train.<name>``.

    ``gpus_per_job`` and ``throughput`` (training tokens per second per GPU) are keyed by
    model size class; estimates use them, the dispatcher allocates ``gpus_per_job``.
    ``eval_throughput`` (eval tokens per second, on the one device that scores) prices the
    time of the job's evals; ``startup_seconds`` is the fixed per-attempt overhead (model
    load, saves, upload) an estimate adds. Prices per GPU-hour live in the price book.
    """

    name = models.SlugField(max_length=40, primary_key=True)
    accelerator = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    gpus_per_job = models.JSONField(help_text='GPUs per job by size class, e.g. {"large": 8}')
    throughput = models.JSONField(help_text="Training tokens/s per GPU by size class")
    eval_throughput = models.JSONField(
        default=dict, blank=True,
        help_text="Eval tokens/s (one device) by size class; unset: the training throughput")
    startup_seconds = models.DecimalField(max_digits=12, decimal_places=3, default=0)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def queue(self) -> str:
        return train_queue(self.name)

    def gpus_for(self, size_class: str) -> int:
        return int(self.gpus_per_job.get(size_class) or self.gpus_per_job.get("small") or 1)

    def throughput_for(self, size_class: str) -> float:
        return float(self.throughput.get(size_class) or self.throughput.get("small") or 1)

    def eval_throughput_for(self, size_class: str) -> float:
        return float((self.eval_throughput or {}).get(size_class)
                     or self.throughput_for(size_class))


class TrainingWorker(models.Model):
    """The last presence heartbeat of one training worker process."""

    name = models.CharField(max_length=200, primary_key=True)
    pool = models.CharField(max_length=40, db_index=True)
    host = models.CharField(max_length=200)
    devices = models.PositiveIntegerField(default=1)
    device_kind = models.CharField(max_length=200, blank=True, default="")
    current_job = models.CharField(max_length=40, blank=True, default="")
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.name
