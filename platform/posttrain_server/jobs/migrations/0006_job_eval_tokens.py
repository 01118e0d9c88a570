"""Eval tokens metered per job (usage kind ``eval_tokens``), eval and training seconds, and the
tokens line split by kind."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0005_alter_attempt_status"),
    ]

    operations = [
        migrations.AddField(
            model_name="finetuningjob",
            name="eval_tokens",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="finetuningjob",
            name="eval_seconds",
            field=models.DecimalField(decimal_places=3, default=0, max_digits=20),
        ),
        migrations.AddField(
            model_name="finetuningjob",
            name="train_seconds",
            field=models.DecimalField(decimal_places=3, default=0, max_digits=20),
        ),
        migrations.AddField(
            model_name="finetuningjob",
            name="cost_tokens_by_kind",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
