"""Start and stop the embedded stack: web server, platform worker (+ beat), training worker.

Used by ``make serve``, ``make demo`` and the end-to-end tests, so all three run the very same
processes. Each process gets its own session, so stopping the stack stops every child
(the trainer grandchildren included) and nothing is left running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def _manage(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], check=True, cwd=ROOT,  # noqa: S603
                   env=env)


def prepare(env: dict[str, str] | None = None) -> None:
    """Migrate the database; everything else (models, data) is built on first use."""
    _manage("migrate", "--no-input", "-v", "0", env=env)


@dataclass
class Stack:
    host: str = "127.0.0.1"
    port: int = 8000
    pool: str = "cpu"
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    log_dir: Path | None = None
    web_workers: int = 2
    processes: list[subprocess.Popen] = field(default_factory=list)
    named: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _spawn(self, name: str, args: list[str], **extra_env: str) -> None:
        env = {**self.env, "POSTTRAIN_PLATFORM_URL": self.url, "PYTHONUNBUFFERED": "1",
               **extra_env}
        if self.log_dir:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            out = (self.log_dir / f"{name}.log").open("ab")
        else:
            out = None
        process = subprocess.Popen(  # noqa: S603 - fixed argument lists
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
            start_new_session=True)
        self.processes.append(process)
        self.named[name] = process

    def start(self, *, timeout: float = 60.0) -> Stack:
        pythonpath = os.pathsep.join([str(ROOT / "platform"), str(ROOT)])
        self.env["PYTHONPATH"] = pythonpath
        var = Path(self.env.get("POSTTRAIN_VAR_DIR", ROOT / "var"))
        metrics_dir = var / f"prometheus-{self.port}"  # gunicorn workers share the histograms
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        self._spawn("web", [PYTHON, "-m", "gunicorn", "posttrain_server.wsgi:application",
                            "--bind", f"{self.host}:{self.port}", "--workers",
                            str(self.web_workers), "--threads", "4", "--timeout", "120",
                            "--access-logfile", "-" if self.log_dir else "/dev/null"],
                    PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
        self._spawn("platform-worker", [
            PYTHON, "-m", "celery", "-A", "posttrain_server.celery_app", "worker", "-B",
            "-Q", "platform", "-n", f"platform-{self.port}@%h", "--concurrency", "2",
            "--loglevel", "INFO", "-s", str(var / f"celerybeat-{self.port}")])
        self.start_training_worker()
        self.wait_ready(timeout)
        return self

    def start_training_worker(self, name: str = "training-worker") -> None:
        """One training worker; fault tests run several under distinct names and kill them."""
        node = f"train-{self.pool}-{self.port}" + ("" if name == "training-worker" else
                                                   f"-{name}")
        self._spawn(name, [
            PYTHON, "-m", "celery", "-A", "workers.celery_app", "worker", "-Q",
            f"train.{self.pool}", "-n", f"{node}@%h", "--concurrency",
            "1", "--prefetch-multiplier", "1", "--loglevel", "INFO"], POSTTRAIN_POOL=self.pool)

    def kill(self, name: str) -> None:
        """SIGKILL a process and everything it started (a crashed node, for fault tests)."""
        process = self.named.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.processes.remove(process)

    def terminate(self, name: str, timeout: float = 120.0) -> int:
        """SIGTERM one process (a node drain) and wait for it to exit on its own."""
        process = self.named.pop(name)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            self.processes.remove(process)

    def check_alive(self) -> None:
        """Raise if a process of the stack has died (its log says why)."""
        for process in self.processes:
            if process.poll() is not None:
                raise RuntimeError(f"{' '.join(map(str, process.args[:5]))} exited with code "
                                   f"{process.returncode}; see {self.log_dir or 'its output'}")

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise TimeoutError(f"web server not ready on {self.url} after {timeout}s")

    def stop(self, timeout: float = 15.0) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
        self.named.clear()

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def sigterm_as_interrupt() -> None:
    """``kill`` (SIGTERM) stops the stack as cleanly as Ctrl-C does."""

    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _raise)


def main() -> None:
    sigterm_as_interrupt()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--pool", default=os.environ.get("POSTTRAIN_POOL", "cpu"))
    args = parser.parse_args()
    prepare()
    stack = Stack(port=args.port, pool=args.pool)
    stack.start()
    print(f"Posttrain is serving at {stack.url} (API docs: {stack.url}/docs). Ctrl-C stops it.",
          flush=True)
    try:
        while all(process.poll() is None for process in stack.processes):
            time.sleep(0.5)
        print("a process of the stack exited; stopping the rest", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
