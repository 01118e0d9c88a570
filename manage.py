#!/usr/bin/env python
"""Django's command-line utility for Posttrain.

``platform/`` is a folder, never a package (``import platform`` must stay the standard
library), so its Django package is put on ``sys.path`` here.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "platform"))
sys.path.insert(1, str(ROOT))


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "posttrain_server.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
