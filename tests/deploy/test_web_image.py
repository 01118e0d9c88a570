"""The slim web image has no torch: the whole platform must import and check without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import importlib, pkgutil, sys
from importlib.abc import MetaPathFinder

BLOCKED = {"torch", "transformers", "trl", "peft", "datasets", "accelerate", "tokenizers"}

class NoTrainingStack(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not in the web image")
        return None

sys.meta_path.insert(0, NoTrainingStack())
sys.path[:0] = ["platform", "."]
import os
os.environ["DJANGO_SETTINGS_MODULE"] = "posttrain_server.settings"
import django
django.setup()
import posttrain_server
for module in pkgutil.walk_packages(posttrain_server.__path__, "posttrain_server."):
    if ".migrations." not in module.name and not module.name.endswith(".tests"):
        importlib.import_module(module.name)
from django.core.management import call_command
call_command("check")
print("ok", sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
"""


def test_the_platform_imports_and_checks_without_the_training_stack(tmp_path):
    result = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                            text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "POSTTRAIN_VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok []")
