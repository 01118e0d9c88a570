"""Puts the platform package and the repository root on ``sys.path`` for entry points.

wsgi, asgi and Celery are started by external programs that do not run ``manage.py``.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for entry in (str(ROOT / "platform"), str(ROOT)):
    if entry not in sys.path:
        sys.path.append(entry)
