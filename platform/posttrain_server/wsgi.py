"""WSGI entry point (gunicorn, runserver)."""

import os

# isort: off
import posttrain_server.paths  # noqa: F401 - puts the repo root on sys.path
# isort: on

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "posttrain_server.settings")
application = get_wsgi_application()
