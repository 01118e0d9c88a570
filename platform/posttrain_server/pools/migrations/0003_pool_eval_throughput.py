"""Pools price the time of a job's evals at their own throughput (``eval_throughput``)."""

from django.db import migrations, models


def seed(apps, schema_editor):
    from posttrain_server.billing.prices import DEFAULT_EVAL_THROUGHPUT

    Pool = apps.get_model("pools", "Pool")
    for name, figures in DEFAULT_EVAL_THROUGHPUT.items():
        pool = Pool.objects.filter(name=name).first()
        if pool is not None and not pool.eval_throughput:
            pool.eval_throughput = figures
            pool.save(update_fields=["eval_throughput"])


class Migration(migrations.Migration):

    dependencies = [
        ("pools", "0002_seed_pools"),
    ]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="eval_throughput",
            field=models.JSONField(blank=True, default=dict, help_text="Eval tokens/s (one device) by size class; unset: the training throughput"),
        ),
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
