"""The platform's Celery app: consumes the ``platform`` queue (validation, events, reaper).

Start with ``python -m celery -A posttrain_server.celery_app worker -Q platform -B`` from
``platform/`` on ``sys.path`` (the Makefile does this).
"""

import os

# isort: off
import posttrain_server.paths  # noqa: F401 - puts the repo root on sys.path
# isort: on

from celery import Celery
from django.conf import settings

from workers import contract
from workers.celery_config import celery_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "posttrain_server.settings")

app = Celery("posttrain_platform")
app.conf.update(celery_settings())
app.autodiscover_tasks(["posttrain_server.files", "posttrain_server.jobs",
                        "posttrain_server.pools"])


@app.on_after_finalize.connect
def _schedule(sender: Celery, **kwargs: object) -> None:
    sender.add_periodic_task(float(settings.REAPER_INTERVAL_S), sender.signature(
        contract.REAP_TASK, queue=contract.PLATFORM_QUEUE), name="reap attempts")
