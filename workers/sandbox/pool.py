"""A pool of sandboxed interpreters that run one job's python grader, sample by sample.

Isolation, each layer on its own (none relies on the user's code behaving):

- bubblewrap (Debian's ``bubblewrap``): fresh network, PID, IPC and UTS namespaces, so
  neither 127.0.0.1 of the host nor the outside is reachable, and killing the sandbox kills
  everything it started; a root of its own holding only ``/usr`` and the interpreter, read
  only, so ``/etc/shadow``, this repository, its settings and other jobs' data are not there;
  an empty writable working folder on a size-capped tmpfs; an empty environment.
- A non-root user (65534) outside any user namespace, so ``RLIMIT_NPROC`` really bounds a
  fork bomb (the kernel exempts root from it).
- rlimits on CPU seconds, address space, processes, open files and file size.
- A wall clock per sample: past it, the sandbox's process group is killed and a fresh
  sandbox replaces it. Replies are read with a byte cap, so huge output cannot fill memory.

Processes live for many samples (the grader is compiled once), which keeps the per-sample
cost at a pipe round trip; one that failed in any way is replaced before its next use.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHILD_PROGRAM = (Path(__file__).parent / "child_program.py").read_text(encoding="utf-8")
NOBODY = 65534
MAX_SOURCE_BYTES = 256 * 1024


class SandboxUnavailable(Exception):
    """This machine cannot run untrusted code safely (no bubblewrap); refuse, never degrade."""


class SandboxError(Exception):
    """The grader failed for one sample: the reason is the user's to read."""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 20  # per process, over all the samples it grades
    memory_bytes: int = 512 * 1024 * 1024
    processes: int = 64  # for user 65534, across all its processes on the host
    open_files: int = 64
    file_bytes: int = 1024 * 1024
    workdir_bytes: int = 8 * 1024 * 1024
    timeout_s: float = 5.0  # wall clock per sample
    reply_bytes: int = 64 * 1024
    start_timeout_s: float = 10.0


@dataclass(frozen=True)
class Outcome:
    score: float | None
    error: str | None = None


def source_check(source: Any) -> str | None:
    """Why a grader source is refused before any sandbox starts (None when it is fine)."""
    if not isinstance(source, str) or not source.strip():
        return "source must be a non-empty string"
    size = len(source.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:
        return f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES}"
    try:
        compile(source, "grader.py", "exec")  # compiling runs nothing
    except SyntaxError as exc:
        return f"source does not compile: {exc.msg} (line {exc.lineno})"
    if "def grade" not in source:
        return "source must define grade(sample, item)"
    return None


def _bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable("python graders need bubblewrap ('apt-get install "
                                 "bubblewrap'), which this worker does not have")
    return path


def _command(limits: SandboxLimits) -> list[str]:
    prefix = Path(sys.base_prefix)
    python = prefix / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    mounts = ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
              "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin"]
    if not str(prefix).startswith("/usr/"):
        mounts += ["--ro-bind", str(prefix), str(prefix)]
    jail = [_bwrap(), "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--new-session", *mounts, "--proc", "/proc", "--dev", "/dev",
            "--perms", "0777", "--size", str(limits.workdir_bytes), "--tmpfs", "/sandbox",
            "--chdir", "/sandbox", "--clearenv", "--setenv", "HOME", "/sandbox"]
    if os.geteuid() == 0:
        # Drop to a real non-root user: RLIMIT_NPROC does not apply to root.
        user = ["/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                "--clear-groups", "--no-new-privs"]
    else:
        jail.insert(1, "--unshare-user")
        user = []
    # rlimits through util-linux's prlimit rather than a preexec_fn, which can deadlock in a
    # threaded parent (the trainer runs torch and grader threads).
    rlimits = ["/usr/bin/prlimit", f"--cpu={limits.cpu_seconds}",
               f"--as={limits.memory_bytes}", f"--nproc={limits.processes}",
               f"--nofile={limits.open_files}", f"--fsize={limits.file_bytes}", "--core=0", "--"]
    return [*rlimits, *jail, "--", *user, str(python), "-I", "-S", "-B", "-c", CHILD_PROGRAM]


class Sandbox:
    """One sandboxed interpreter holding one compiled grader."""

    def __init__(self, source: str, limits: SandboxLimits) -> None:
        self.limits = limits
        self.process = subprocess.Popen(  # noqa: S603 - fixed arguments, no shell
            _command(limits), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={}, start_new_session=True,
        )
        self.alive = True
        reply = self._ask({"source": source}, limits.start_timeout_s)
        if not reply.get("ok"):
            self.kill()
            raise SandboxError(str(reply.get("error", "the sandbox did not start")))

    def _ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self.kill()
            raise SandboxError("the grader's sandbox exited") from exc
        line = self._read_line(timeout)
        try:
            reply = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self.kill()
            raise SandboxError("the grader wrote to the protocol channel") from exc
        if not isinstance(reply, dict):
            self.kill()
            raise SandboxError("the grader wrote to the protocol channel")
        return reply

    def _read_line(self, timeout: float) -> bytes:
        stdout = self.process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    raise SandboxError(f"grade took longer than {timeout:g} s")
                if not selector.select(remaining):
                    continue
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    code = self.process.poll()
                    self.kill()
                    raise SandboxError(self._exit_reason(code))
                buffer += chunk
                if len(buffer) > self.limits.reply_bytes:
                    self.kill()
                    raise SandboxError(f"the grader's reply exceeded "
                                       f"{self.limits.reply_bytes} bytes")
        return buffer.split(b"\n", 1)[0]

    def _exit_reason(self, code: int | None) -> str:
        if code is None:
            try:
                code = self.process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                return "the grader's sandbox closed its output"
        return f"the grader's sandbox exited (code {code}): a resource limit or a crash"

    def grade(self, sample: dict[str, Any], item: dict[str, Any]) -> Outcome:
        reply = self._ask({"sample": sample, "item": item}, self.limits.timeout_s)
        if not reply.get("ok"):
            return Outcome(None, str(reply.get("error"))[:2000])
        score = reply.get("score")
        if not isinstance(score, int | float) or isinstance(score, bool):
            return Outcome(None, "grade returned no number")
        return Outcome(float(score))

    def kill(self) -> None:
        if not self.alive:
            return
        self.alive = False
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass


class SandboxPool:
    """``size`` sandboxes for one grader; ``grade`` is safe to call from many threads."""

    def __init__(self, source: str, *, size: int = 2,
                 limits: SandboxLimits | None = None) -> None:
        problem = source_check(source)
        if problem:
            raise SandboxError(problem)
        _bwrap()
        self.source, self.size = source, max(1, size)
        self.limits = limits or SandboxLimits()
        self._idle: queue.Queue[Sandbox | None] = queue.Queue()
        for _ in range(self.size):
            self._idle.put(None)  # started on first use
        self._executor = ThreadPoolExecutor(self.size, thread_name_prefix="sandbox")

    def grade(self, sample: dict[str, Any], item: dict[str, Any]) -> Outcome:
        sandbox = self._idle.get()
        try:
            if sandbox is None or not sandbox.alive:
                sandbox = Sandbox(self.source, self.limits)
            return sandbox.grade(sample, item)
        except SandboxError as exc:
            return Outcome(None, str(exc))
        finally:
            self._idle.put(sandbox if sandbox is not None and sandbox.alive else None)

    def grade_many(self, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Outcome]:
        return list(self._executor.map(lambda pair: self.grade(*pair), pairs))

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        while not self._idle.empty():
            sandbox = self._idle.get_nowait()
            if sandbox is not None:
                sandbox.kill()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
