"""The ``posttrain`` command through its installed entry point: local checks, usage errors,
exit codes, ``--json`` on every command. (Against a live server: ``tests/e2e/test_sdk_cli.py``.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from posttrain import cli
from workers.toytask import addition_rows, write_jsonl

POSTTRAIN = shutil.which("posttrain", path=str(Path(sys.executable).parent))


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    assert POSTTRAIN, "the posttrain entry point is not installed (pip install -e './sdk[cli]')"
    base = {k: v for k, v in os.environ.items() if not k.startswith("POSTTRAIN_")}
    return subprocess.run([POSTTRAIN, *args], capture_output=True, text=True, timeout=60,
                          env={**base, **(env or {})}, check=False)


@pytest.fixture
def good_dataset(tmp_path) -> Path:
    path = tmp_path / "train.jsonl"
    write_jsonl(path, addition_rows(12, seed=0, split="train"))
    return path


def test_files_check_accepts_a_valid_dataset(good_dataset):
    result = run_cli("files", "check", str(good_dataset))

    assert result.returncode == 0, result.stderr
    assert "OK, 12 chat examples" in result.stdout


def test_files_check_reports_errors_by_line_with_its_own_exit_code(tmp_path, good_dataset):
    lines = good_dataset.read_text().splitlines()
    lines[2] = '{"messages": [{"role": "user", "content": "hi"}]}'
    lines[5] = "{not json"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")

    human = run_cli("files", "check", str(bad))
    machine = run_cli("files", "check", str(bad), "--json")

    assert human.returncode == cli.EXIT_INVALID_DATASET == 5
    assert "line 3: needs at least one assistant message" in human.stderr
    assert "line 6: invalid JSON" in human.stderr
    report = json.loads(machine.stdout)
    assert machine.returncode == 5
    assert report["ok"] is False and report["error_count"] == 2
    assert [error["line"] for error in report["errors"]] == [3, 6]


def test_files_check_uses_the_servers_implementation(good_dataset):
    from workers import dataset_rules

    with good_dataset.open("rb") as stream:
        server = dataset_rules.validate_jsonl(stream).as_dict()
    local = json.loads(run_cli("files", "check", str(good_dataset), "--json").stdout)

    assert {key: local[key] for key in server} == server


@pytest.mark.parametrize("args", [
    ("files", "check", "/nonexistent/train.jsonl"),
    ("jobs", "create", "--training-file", "file-1"),  # --model missing
    ("jobs", "frobnicate"),
    ("jobs", "create", "--model", "m", "--training-file", "file-1", "--n-epochs", "many"),
    (),
])
def test_usage_errors_exit_2(args):
    result = run_cli(*args, env={"POSTTRAIN_API_KEY": "sk-test"})

    assert result.returncode == cli.EXIT_USAGE == 2, (result.stdout, result.stderr)


def test_a_missing_api_key_is_a_usage_error():
    result = run_cli("jobs", "list")

    assert result.returncode == 2
    assert "POSTTRAIN_API_KEY" in result.stderr


def test_an_unreachable_server_is_an_api_error():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_cli("jobs", "list", "--max-retries", "0",
                     env={"POSTTRAIN_API_KEY": "sk-test",
                          "POSTTRAIN_BASE_URL": f"http://127.0.0.1:{port}/v1"})

    assert result.returncode == cli.EXIT_API_ERROR == 1
    assert "Connection error" in result.stderr


def leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                 ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subparsers = [action for action in parser._actions
                  if isinstance(action, argparse._SubParsersAction)]
    if not subparsers:
        return [(path, parser)]
    leaves = []
    for name, sub in subparsers[0].choices.items():
        leaves += leaf_parsers(sub, (*path, name))
    return leaves


def test_every_command_takes_json():
    leaves = leaf_parsers(cli.build_parser())

    assert {" ".join(path) for path, _ in leaves} >= {
        "files upload", "files list", "files check", "jobs create", "jobs list", "jobs get",
        "jobs cancel", "jobs follow", "jobs checkpoints", "models list", "models download"}
    for path, parser in leaves:
        assert any("--json" in action.option_strings for action in parser._actions), path
