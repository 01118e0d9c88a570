"""Start and stop the embedded stack: web server, platform worker (+ beat), training worker.

Used by ``make serve``, ``make demo`` and the end-to-end tests, so all three run the very same
processes. Each process gets its own session, so stopping the stack stops every child
(the trainer grandchildren included) and nothing is left running.

Once ready, the stack supervises its processes the way ``restart: unless-stopped`` (Compose)
and a Deployment (Kubernetes) do: one that exits is started again, after a backoff. Celery
exits on errors it calls unrecoverable (seen here: kombu raising AttributeError when a broker
restart catches it acknowledging a message), and the design counts on it coming back, since
the database, not the process, holds every job's state.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def _manage(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], check=True, cwd=ROOT,  # noqa: S603
                   env=env)


def prepare(env: dict[str, str] | None = None) -> None:
    """Migrate the database; everything else (models, data) is built on first use."""
    _manage("migrate", "--no-input", "-v", "0", env=env)


# A process that keeps dying is restarted after 1, 2, 4 ... 30 s; this many restarts within
# CRASH_LOOP_WINDOW_S is a crash loop, which ``check_alive`` reports instead of hiding.
RESTART_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
CRASH_LOOP_RESTARTS = 5
CRASH_LOOP_WINDOW_S = 120.0


@dataclass
class Restart:
    """One process the supervisor started again: what exited, how, and when."""

    name: str
    returncode: int
    at: float


@dataclass
class Stack:
    host: str = "127.0.0.1"
    port: int = 8000
    pool: str = "cpu"
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    log_dir: Path | None = None
    web_workers: int = 2
    supervise: bool = True
    processes: list[subprocess.Popen] = field(default_factory=list)
    named: dict[str, subprocess.Popen] = field(default_factory=dict)
    restarts: list[Restart] = field(default_factory=list)
    _specs: dict[str, tuple[list[str], dict[str, str]]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _watcher: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _spawn(self, name: str, args: list[str], **extra_env: str) -> None:
        env = {**self.env, "POSTTRAIN_PLATFORM_URL": self.url, "PYTHONUNBUFFERED": "1",
               **extra_env}
        out = self._log_file(name)
        process = subprocess.Popen(  # noqa: S603 - fixed argument lists
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
            start_new_session=True)
        if out is not None:
            out.close()  # the child holds its own copy; a restart must not leak one per spawn
        with self._lock:
            self.processes.append(process)
            self.named[name] = process
            self._specs[name] = (args, extra_env)

    def _log_file(self, name: str) -> IO[bytes] | None:
        if not self.log_dir:
            return None
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return (self.log_dir / f"{name}.log").open("ab")

    def _say(self, name: str, text: str) -> None:
        line = f"[devstack] {time.strftime('%Y-%m-%d %H:%M:%S')} {name}: {text}\n"
        if self.log_dir:
            with (self.log_dir / f"{name}.log").open("a") as log:
                log.write(line)
        else:
            sys.stderr.write(line)

    def _watch(self) -> None:
        due: dict[int, float] = {}  # pid of an exited process -> when its restart is due
        while not self._stopping.wait(0.5):
            with self._lock:
                for name, process in list(self.named.items()):
                    if process.poll() is None or self._stopping.is_set():
                        continue
                    now = time.monotonic()
                    if process.pid not in due:
                        recent = len(self._recent_restarts(name, now))
                        wait = RESTART_BACKOFF_S[min(recent, len(RESTART_BACKOFF_S) - 1)]
                        due[process.pid] = now + wait
                        self._say(name, f"exited with code {process.returncode}; "
                                  f"starting it again in {wait:.0f} s")
                    if now < due[process.pid]:
                        continue
                    del due[process.pid]
                    self._restart(name, process)

    def _recent_restarts(self, name: str, now: float) -> list[Restart]:
        return [r for r in self.restarts if r.name == name and now - r.at < CRASH_LOOP_WINDOW_S]

    def _restart(self, name: str, process: subprocess.Popen) -> None:
        """Start ``name`` again; its orphans (a trainer child) go first, so no job has two."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.processes.remove(process)
        del self.named[name]
        self.restarts.append(Restart(name, process.returncode, time.monotonic()))
        args, extra_env = self._specs[name]
        self._spawn(name, args, **extra_env)

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
        if self.supervise:
            self._watcher = threading.Thread(target=self._watch, name="devstack-supervisor",
                                             daemon=True)
            self._watcher.start()
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
        """SIGKILL a process and everything it started (a crashed node, for fault tests).

        The process leaves the stack: the supervisor does not start it again.
        """
        with self._lock:
            process = self.named.pop(name)
            self.processes.remove(process)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def terminate(self, name: str, timeout: float = 120.0) -> int:
        """SIGTERM one process (a node drain) and wait for it to exit on its own."""
        with self._lock:
            process = self.named.pop(name)
            self.processes.remove(process)
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def check_alive(self) -> None:
        """Raise if a process has died for good: unsupervised, or in a crash loop.

        Under supervision a single exit is not an error (it is started again, and
        ``restarts`` says so); one that keeps exiting is, and its log says why.
        """
        now = time.monotonic()
        with self._lock:
            for name, process in self.named.items():
                recent = self._recent_restarts(name, now)
                looping = len(recent) >= CRASH_LOOP_RESTARTS
                if looping or (process.poll() is not None and self._watcher is None):
                    why = (f"restarted {len(recent)} times in {CRASH_LOOP_WINDOW_S:.0f} s"
                           if looping else f"exited with code {process.returncode}")
                    raise RuntimeError(f"{name} ({' '.join(map(str, process.args[:5]))}) "
                                       f"{why}; see {self.log_dir or 'its output'}")

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
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None
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
        while True:  # the supervisor restarts what exits; a crash loop ends the stack
            stack.check_alive()
            time.sleep(1)
    except RuntimeError as exc:
        print(f"{exc}; stopping the rest", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
