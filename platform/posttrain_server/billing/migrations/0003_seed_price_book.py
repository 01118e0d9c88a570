"""Seed the first price book from ``prices.DEFAULT_RATES`` (illustrative, editable)."""

import datetime

from django.db import migrations


def seed(apps, schema_editor):
    from posttrain_server.billing.prices import DEFAULT_RATES

    PriceBook = apps.get_model("billing", "PriceBook")
    PriceBook.objects.get_or_create(
        version=DEFAULT_RATES.version,
        defaults={"effective_at": datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC),
                  **DEFAULT_RATES.as_json(),
                  "note": "Illustrative defaults; edit in the admin by adding a new version."})


class Migration(migrations.Migration):
    dependencies = [("billing", "0002_price_book_and_quotas")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
