"""The python-grader sandbox: every escape attempt fails, the host is unharmed, and the same
pool grades correctly right after."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from workers.sandbox.pool import MAX_SOURCE_BYTES, SandboxError, SandboxLimits, SandboxPool

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap is not installed")

LIMITS = SandboxLimits(timeout_s=1.5, cpu_seconds=5, memory_bytes=256 * 1024 * 1024,
                       processes=64)

# The grader does the attack named by item["attack"], else scores the answer honestly.
SOURCE = '''
import os, socket, subprocess, sys, time

def attack(name, item):
    if name == "loop":
        while True:
            pass
    if name == "sleep":
        time.sleep(3600)
    if name == "fork":
        while True:
            try:
                os.fork()
            except OSError:
                pass
    if name == "memory":
        hoard = []
        while True:
            hoard.append(bytearray(50 * 1024 * 1024))
    if name == "disk":
        index = 0
        while True:
            with open(f"fill-{index}", "wb") as handle:
                handle.write(b"x" * 512 * 1024)
            index += 1
    if name == "read":
        return float(len(open(item["path"], "rb").read()))
    if name == "listdir":
        return float(len(os.listdir(item["path"])))
    if name == "connect":
        sock = socket.create_connection((item["host"], item["port"]), timeout=1)
        sock.sendall(b"escaped")
        return 1.0
    if name == "subprocess":
        out = subprocess.run(["sh", "-c", item["command"]], capture_output=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.decode()[-200:])
        return float(out.stdout.decode().strip())
    if name == "print":
        print("x" * 50_000_000)
        sys.stderr.write("y" * 10_000_000)
        return 1.0
    if name == "channel":
        for fd in range(3, 10):
            try:
                os.write(fd, b"z" * 10_000_000)
            except OSError:
                pass
        return 1.0
    if name == "text":
        return "one"
    if name == "nan":
        return float("nan")
    if name == "environ":
        return float(len(os.environ.get("DATABASE_URL", "")) + len(os.environ.get("HOME", "")))

def grade(sample, item):
    if item.get("attack"):
        return attack(item["attack"], item)
    return float(sample["output_text"] == item["reference"])
'''


@pytest.fixture
def pool():
    with SandboxPool(SOURCE, size=1, limits=LIMITS) as running:
        yield running


def still_grades(pool: SandboxPool) -> None:
    """The grader works right after the attack, with the same pool."""
    assert pool.grade({"output_text": "42"}, {"reference": "42"}).score == 1.0
    assert pool.grade({"output_text": "41"}, {"reference": "42"}).score == 0.0


def nobody_processes() -> int:
    return sum(1 for entry in Path("/proc").iterdir()
               if entry.name.isdigit() and _uid(entry) == 65534)


def _uid(entry: Path) -> int | None:
    try:
        return entry.stat().st_uid
    except OSError:
        return None


def attack(pool: SandboxPool, name: str, **item):
    return pool.grade({"output_text": "42"}, {"attack": name, **item})


@pytest.mark.parametrize("name", ["loop", "sleep"])
def test_a_grader_that_never_returns_is_stopped_by_the_wall_clock(pool, name):
    started = time.monotonic()
    outcome = attack(pool, name)

    assert outcome.score is None and "longer than 1.5 s" in outcome.error
    assert time.monotonic() - started < 10
    still_grades(pool)


def test_a_fork_bomb_is_bounded_and_its_processes_are_all_killed(pool):
    before = nobody_processes()
    outcome = attack(pool, "fork")

    assert outcome.score is None
    deadline = time.monotonic() + 10
    while nobody_processes() > before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert nobody_processes() <= before
    assert subprocess.run(["true"]).returncode == 0  # the host still starts processes
    still_grades(pool)


def test_a_memory_bomb_fails_inside_the_address_space_limit(pool):
    outcome = attack(pool, "memory")

    assert outcome.score is None and "MemoryError" in outcome.error
    still_grades(pool)


def test_filling_the_disk_stops_at_the_working_folder_cap_and_writes_nothing_here(pool):
    outcome = attack(pool, "disk")

    assert outcome.score is None and ("No space left" in outcome.error
                                      or "exited" in outcome.error)
    assert not list(Path.cwd().glob("fill-*"))
    still_grades(pool)


@pytest.mark.parametrize("path", ["/etc/shadow", "/etc/passwd"])
def test_host_system_files_are_not_there(pool, path):
    outcome = attack(pool, "read", path=path)

    assert outcome.score is None and "FileNotFoundError" in outcome.error
    still_grades(pool)


def test_the_platform_settings_and_another_jobs_data_are_not_there(pool, tmp_path):
    secret = tmp_path / "other-job" / "train.jsonl"
    secret.parent.mkdir()
    secret.write_text('{"secret": "another organization\'s data"}\n')
    settings = Path(__file__).resolve().parents[2] / "platform" / "posttrain_server" / \
        "settings.py"
    assert settings.is_file()

    for path in (secret, settings):
        outcome = attack(pool, "read", path=str(path))
        assert outcome.score is None and "FileNotFoundError" in outcome.error
    assert attack(pool, "listdir", path="/").score <= 8.0  # only /usr, /proc, /dev, ...
    still_grades(pool)


def test_the_environment_is_empty_of_secrets(pool, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://secret@db/prod")
    with SandboxPool(SOURCE, size=1, limits=LIMITS) as fresh:
        assert attack(fresh, "environ").score == len("/sandbox")


def test_a_socket_to_the_hosts_loopback_reaches_nothing(pool):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        outcome = attack(pool, "connect", host="127.0.0.1", port=listener.getsockname()[1])

        assert outcome.score is None
        with pytest.raises(TimeoutError):
            listener.accept()
    still_grades(pool)


def test_a_socket_to_an_outside_address_fails(pool):
    outcome = attack(pool, "connect", host="1.1.1.1", port=443)

    assert outcome.score is None and ("unreachable" in outcome.error.lower()
                                      or "OSError" in outcome.error)
    still_grades(pool)


def test_a_subprocess_runs_as_nobody_and_sees_no_host_files(pool):
    assert attack(pool, "subprocess", command="id -u").score == 65534.0
    outcome = attack(pool, "subprocess", command="cat /etc/shadow")
    assert outcome.score is None and "No such file" in outcome.error
    still_grades(pool)


def test_huge_printed_output_is_discarded(pool):
    assert attack(pool, "print").score == 1.0
    still_grades(pool)


def test_huge_output_on_the_reply_channel_is_cut_off(pool):
    outcome = attack(pool, "channel")

    assert outcome.score is None
    still_grades(pool)


def test_a_non_numeric_result_is_an_error_for_that_sample(pool):
    outcome = attack(pool, "text")

    assert outcome.score is None and "returned str, not a number" in outcome.error
    still_grades(pool)


def test_code_over_the_size_limit_is_refused_before_anything_runs():
    source = "def grade(sample, item):\n    return 1.0\n" + "#" * MAX_SOURCE_BYTES

    with pytest.raises(SandboxError, match="the limit is 262144"):
        SandboxPool(source)


def test_a_grader_that_fails_to_load_reports_why_for_every_sample():
    with SandboxPool("import nonexistent_module\ndef grade(s, i):\n    return 1\n",
                     size=1, limits=LIMITS) as broken:
        outcome = broken.grade({"output_text": "x"}, {})
    assert outcome.score is None and "ModuleNotFoundError" in outcome.error


def test_the_pool_grades_many_samples_in_parallel_in_order():
    source = "def grade(sample, item):\n    return float(sample['output_text'])\n"
    with SandboxPool(source, size=2, limits=LIMITS) as running:
        outcomes = running.grade_many([({"output_text": str(i)}, {}) for i in range(20)])
    assert [outcome.score for outcome in outcomes] == [float(i) for i in range(20)]
    assert os.getpid() > 0
