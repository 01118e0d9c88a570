"""The committed OpenAPI file must be what the code generates: CI fails when they drift."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_openapi_file_matches_the_code(tmp_path):
    generated = tmp_path / "openapi.yaml"
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "spectacular", "--file",
                    str(generated), "--validate", "--fail-on-warn"], check=True, cwd=ROOT,
                   capture_output=True)
    committed = (ROOT / "api_docs" / "openapi.yaml").read_text()
    assert generated.read_text() == committed, (
        "api_docs/openapi.yaml is stale: run `make schema` and commit it")
