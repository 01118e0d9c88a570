from django.contrib import admin

from posttrain_server.pools.models import Pool, TrainingWorker


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("name", "accelerator", "enabled", "gpus_per_job", "throughput",
                    "startup_seconds")
    list_editable = ("enabled",)


@admin.register(TrainingWorker)
class TrainingWorkerAdmin(admin.ModelAdmin):
    list_display = ("name", "pool", "host", "devices", "current_job", "last_seen_at")
    readonly_fields = ("name", "pool", "host", "devices", "device_kind", "current_job",
                       "started_at", "last_seen_at")
