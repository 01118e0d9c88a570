"""Seed the cpu, blackwell and rubin pools from ``prices.DEFAULT_POOLS`` (illustrative)."""

from django.db import migrations


def seed(apps, schema_editor):
    from posttrain_server.billing.prices import DEFAULT_POOLS

    Pool = apps.get_model("pools", "Pool")
    for name, fields in DEFAULT_POOLS.items():
        Pool.objects.get_or_create(name=name, defaults=fields)


class Migration(migrations.Migration):
    dependencies = [("pools", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
