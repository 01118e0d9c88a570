"""``python -m posttrain``: the same CLI as the ``posttrain`` command."""

import sys

from posttrain.cli import main

sys.exit(main())
