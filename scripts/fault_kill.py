"""SIGKILL training workers at random training steps, N times, and prove nothing is lost.

Why a script and not only a test: the invariants of issue 8 ("nothing lost, nothing billed
twice") are statistical claims about many faults, so they are measured over many kills and
printed as figures; the e2e test ``tests/e2e/test_fault_kill.py`` runs this script three times.

It starts its own embedded stack (web, platform worker with the reaper, ``--workers`` training
workers) with short leases (heartbeat 0.5 s, lease 5 s, reaper every 1 s), spreads ``--kills``
kills over ``--jobs`` supervised jobs (a job is killed ``kills / jobs`` times, so the attempt
cap is set one above that), and kills a worker's whole process group (worker and trainer) when
its attempt has reached a random step past the job's latest checkpoint. A killed worker is
restarted at once, as an orchestrator would. With ``--cap-job`` one more job has its worker
killed every time it is claimed, and must end ``failed`` with ``worker_lost`` after the cap.

Checked, and the exit status is non-zero when any fails:
  * 0 jobs lost: every killed job ends ``succeeded`` with exactly kills + 1 attempts;
  * never two runners for one job at once: a sampler of /proc sees at most one trainer
    process per job, and each retry was claimed only after its predecessor was killed;
  * every kill resumed from a checkpoint at least as recent as the one seen at the kill;
  * 0 duplicate usage rows (one row per job, attempt and kind);
  * GPU-seconds billed = the sum of the attempts' own segments (a lost attempt's segment is
    claim to last heartbeat, never past its kill but for a heartbeat in flight; the last
    attempt's is what it reported).

    .venv/bin/python scripts/fault_kill.py [--kills 20] [--jobs 4] [--workers 3] [--seed 0]
        [--cap-job] [--var-dir DIR] [--port PORT] [--timeout 600]

The database is ``DATABASE_URL`` (SQLite in the var dir by default) and the broker
``CELERY_BROKER_URL`` (kombu's filesystem transport in the var dir by default).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "platform"), str(ROOT / "scripts")]

from devstack import Stack, prepare  # noqa: E402

TERMINAL = {"succeeded", "failed", "cancelled"}
LEASE_S, REAPER_S, HEARTBEAT_S = 5, 1, 0.5
ROWS, BATCH = 2000, 16  # 125 steps, a checkpoint every 13: room for several kills per job


@dataclass
class Kill:
    job: str
    attempt: int
    at: float  # wall clock (time.time()) of the SIGKILL
    step: int  # the attempt's last step the platform had seen
    checkpoint: int  # the job's latest checkpoint step the platform had seen
    target: int = 0
    resumed_from: int | None = None
    billed_s: Decimal | None = None
    ran_s: float = 0.0


@dataclass
class Plan:
    """The kills still owed to one job, and the next random step to kill it at."""

    job: str
    kills_left: int
    target: int | None = None
    done_attempts: set[int] = field(default_factory=set)


class RunnerSampler(threading.Thread):
    """Counts live trainer processes per job from /proc, to catch two runners at once.

    The trainer's command line names its spec file ``<var>/work/<job>-<attempt>/spec.json``;
    zombies have an empty command line, so a killed trainer stops counting at once.
    """

    def __init__(self, var_dir: Path) -> None:
        super().__init__(daemon=True)
        self.pattern = re.compile(re.escape(str(var_dir)) + r"/work/(ftjob-[^/]+)-(\d+)/spec")
        self.max_per_job: Counter[str] = Counter()
        self.overlaps: list[str] = []
        self.samples = 0
        self.stopped = threading.Event()

    def sample(self) -> None:
        live: defaultdict[str, set[int]] = defaultdict(set)
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if b"workers.trainer." not in cmdline:
                continue
            match = self.pattern.search(cmdline.decode(errors="replace"))
            if match:
                live[match[1]].add(int(entry.name))
        for job, pids in live.items():
            self.max_per_job[job] = max(self.max_per_job[job], len(pids))
            if len(pids) > 1:
                self.overlaps.append(f"{job}: trainer processes {sorted(pids)}")
        self.samples += 1

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            self.sample()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def configure(args: argparse.Namespace) -> Path:
    """Environment for this process (Django) and the stack's processes, before Django loads."""
    from workers import env

    models_root = env.models_root()  # reuse the caller's built tiny model: no rebuild per run
    var_dir = (args.var_dir or Path(tempfile.mkdtemp(prefix="posttrain-fault-"))).resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    per_job = math.ceil(args.kills / args.jobs)
    os.environ.update({
        "POSTTRAIN_VAR_DIR": str(var_dir),
        "POSTTRAIN_MODELS_ROOT": str(models_root),
        "POSTTRAIN_HEARTBEAT_INTERVAL_S": str(HEARTBEAT_S),
        "POSTTRAIN_LEASE_TIMEOUT_S": str(LEASE_S),
        "POSTTRAIN_REAPER_INTERVAL_S": str(REAPER_S),
        "POSTTRAIN_WORKER_HEARTBEAT_S": "1",
        # One above the kills a job takes: the cap-job shows the cap still fails a job.
        "POSTTRAIN_MAX_ATTEMPTS": str(per_job + 1),
        "DJANGO_SETTINGS_MODULE": "posttrain_server.settings",
        # Several trainers share a few cores here: one thread each, or OpenMP's spinning
        # threads slow every step many times over (measured ~1 step/s instead of ~20).
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    })
    os.environ.pop("POSTTRAIN_WORK_DIR", None)  # the sampler looks for <var>/work
    return var_dir


def purge_queues() -> None:
    """Empty this broker's ``platform`` and ``train.cpu`` queues before the stack starts.

    A message an earlier run (or a test run) left there names a server long gone: each costs
    a worker ~15 s of claim retries and skews every figure. Give the script a broker of its
    own (the default, a filesystem broker in its var dir, is).
    """
    from posttrain_server.celery_app import app
    from workers import contract, env

    if env.broker_url().startswith("filesystem://"):
        return  # a fresh folder: nothing to purge
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for queue in (contract.PLATFORM_QUEUE, contract.train_queue("cpu")):
            try:
                channel.queue_purge(queue)
            except Exception:  # noqa: S110 - a queue never declared has nothing to purge
                pass


def current_attempt(job_id: str) -> Any:
    from posttrain_server.jobs.models import Attempt

    return Attempt.objects.filter(job_id=job_id).order_by("-number").first()


def seen_step(job_id: str, attempt: int) -> tuple[int, int]:
    """(last step the platform has from this attempt, total steps) from its metrics events."""
    from posttrain_server.jobs.models import JobEvent

    event = (JobEvent.objects.filter(job_id=job_id, attempt=attempt, type="metrics")
             .order_by("-seq").first())
    if event is None or not event.data:
        return 0, 0
    return int(event.data.get("step") or 0), int(event.data.get("total_steps") or 0)


def latest_checkpoint(job_id: str) -> int | None:
    from posttrain_server.jobs.models import Checkpoint

    checkpoint = Checkpoint.objects.filter(job_id=job_id).order_by("-step").first()
    return checkpoint.step if checkpoint else None


class Chaos:
    """Owns the training workers: finds the one running an attempt, kills and restarts it."""

    def __init__(self, stack: Stack, workers: int) -> None:
        self.stack = stack
        self.names = ["training-worker"] + [f"w{i}" for i in range(1, workers)]
        for name in self.names[1:]:
            stack.start_training_worker(name)

    def kill_runner_of(self, attempt: Any) -> bool:
        """SIGKILL the process group of the worker that claimed ``attempt``; restart it."""
        try:
            pid = int(attempt.worker.rsplit(":", 1)[1])
            group = os.getpgid(pid)
        except (IndexError, ValueError, ProcessLookupError):
            return False
        for name in self.names:
            process = self.stack.named.get(name)
            if process is not None and process.pid == group:
                self.stack.kill(name)
                self.stack.start_training_worker(name)
                return True
        return False


def drive(args: argparse.Namespace, stack: Stack,
          client: httpx.Client) -> tuple[list[Kill], dict[str, Plan], str | None, float]:
    """Create the jobs, then kill their workers at random steps until every job has ended."""
    from posttrain_server.jobs.models import FineTuningJob

    rng = random.Random(args.seed)
    chaos = Chaos(stack, args.workers)
    from workers.toytask import addition_rows, write_jsonl

    path = write_jsonl(Path(os.environ["POSTTRAIN_VAR_DIR"]) / "train.jsonl",
                       addition_rows(ROWS, seed=args.seed, split="train"))
    from demo import upload

    file = upload(client, path)
    assert file["status"] == "processed", file
    body = {"model": "posttrain-tiny", "training_file": file["id"], "eval_samples": 0,
            "method": {"type": "supervised", "supervised": {
                "hyperparameters": {"n_epochs": 1, "batch_size": BATCH}}}}
    per_job = math.ceil(args.kills / args.jobs)
    plans: dict[str, Plan] = {}
    owed = args.kills
    started = time.monotonic()
    for index in range(args.jobs):
        job = client.post("/fine_tuning/jobs", json={**body, "seed": args.seed * 100 + index})
        job_id = job.raise_for_status().json()["id"]
        plans[job_id] = Plan(job_id, min(per_job, owed))
        owed -= plans[job_id].kills_left
    cap_job = None
    if args.cap_job:
        cap_job = client.post("/fine_tuning/jobs", json={**body, "seed": 7}).raise_for_status(
        ).json()["id"]
    cap_killed: set[int] = set()
    kills: list[Kill] = []
    deadline = time.monotonic() + args.timeout
    pending = set(plans) | ({cap_job} if cap_job else set())
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs not finished after {args.timeout}s: {sorted(pending)}")
        stack.check_alive()
        statuses = dict(FineTuningJob.objects.filter(id__in=pending)
                        .values_list("id", "status"))
        for job_id in sorted(pending):
            if statuses[job_id] in TERMINAL:
                pending.discard(job_id)
                continue
            attempt = current_attempt(job_id)
            if attempt is None or attempt.status != "running":
                continue
            if job_id == cap_job:
                if attempt.number not in cap_killed and chaos.kill_runner_of(attempt):
                    cap_killed.add(attempt.number)
                    print(f"  cap job: killed attempt {attempt.number} at its claim",
                          flush=True)
                continue
            plan = plans[job_id]
            if plan.kills_left == 0 or attempt.number in plan.done_attempts:
                continue
            step, total = seen_step(job_id, attempt.number)
            checkpoint = latest_checkpoint(job_id)
            if not total or checkpoint is None:
                continue  # nothing to resume from yet: a kill now would restart from 0
            if plan.target is None:  # a random step in this kill's share of what is left
                low = max(step, checkpoint) + 1
                high = max(low, low + (int(total * 0.85) - low) // plan.kills_left)
                plan.target = rng.randint(low, high)
            if step < plan.target:
                continue
            at = time.time()
            if chaos.kill_runner_of(attempt):
                kills.append(Kill(job_id, attempt.number, at, step, checkpoint, plan.target))
                plan.kills_left -= 1
                plan.done_attempts.add(attempt.number)
                plan.target = None
                print(f"  kill {len(kills):2}: {job_id} attempt {attempt.number} at step "
                      f"{step}/{total} (target {kills[-1].target}, checkpoint {checkpoint})",
                      flush=True)
        time.sleep(0.2)
    return kills, plans, cap_job, time.monotonic() - started


def verify(kills: list[Kill], plans: dict[str, Plan], cap_job: str | None,
           sampler: RunnerSampler, requested: int) -> list[tuple[str, str, bool]]:
    """Every invariant as (name, figure, held); the caller prints them and sets the exit."""
    from django.conf import settings

    from posttrain_server.billing.models import UsageRecord
    from posttrain_server.jobs.models import Attempt, FineTuningJob, JobEvent

    jobs = {job.id: job for job in FineTuningJob.objects.filter(id__in=list(plans))}
    lost_jobs = [j for j in plans if jobs[j].status != "succeeded"]
    kills_by_job = Counter(kill.job for kill in kills)
    wrong_attempts = [j for j in plans
                      if Attempt.objects.filter(job_id=j).count() != kills_by_job[j] + 1]

    resumed = 0
    late_claims = []
    for kill in kills:
        retry = Attempt.objects.filter(job_id=kill.job, number=kill.attempt + 1).first()
        killed = Attempt.objects.get(job_id=kill.job, number=kill.attempt)
        if retry is None:
            continue
        if retry.resume_from_key:
            kill.resumed_from = int(retry.resume_from_key.rsplit("step-", 1)[1].split(".")[0])
        started = JobEvent.objects.filter(
            job_id=kill.job, attempt__isnull=True,
            message__startswith=f"Attempt {retry.number} started",
            message__contains="resuming from checkpoint step-").exists()
        if (kill.resumed_from is not None and kill.resumed_from >= kill.checkpoint
                and started):
            resumed += 1
        if retry.claimed_at is None or retry.claimed_at.timestamp() <= kill.at:
            late_claims.append(f"{kill.job} attempt {retry.number}")
        if killed.status == "lost" and killed.claimed_at and killed.heartbeat_at:
            kill.ran_s = kill.at - killed.claimed_at.timestamp()

    rows = list(UsageRecord.objects.filter(job_id__in=list(plans) + ([cap_job] if cap_job
                                                                      else [])))
    duplicates = sum(n - 1 for n in Counter((r.job_id, r.attempt, r.kind) for r in rows).values()
                     if n > 1)
    billed_total = Decimal(0)
    segments_total = Decimal(0)
    over_billed = []
    missing_segments = []
    for job_id in plans:
        billed = Decimal(jobs[job_id].device_seconds or 0)
        billed_total += billed
        for attempt in Attempt.objects.filter(job_id=job_id).order_by("number"):
            if attempt.status == "lost":
                segment = Decimal(str(max(0.0, (attempt.heartbeat_at - attempt.claimed_at)
                                          .total_seconds()))).quantize(Decimal("0.001"))
            else:
                finished = JobEvent.objects.filter(job_id=job_id, attempt=attempt.number,
                                                   message__contains="finished:").first()
                if finished is None or not finished.data:
                    missing_segments.append(f"{job_id} attempt {attempt.number}")
                    continue
                segment = Decimal(str(finished.data["device_seconds"])).quantize(
                    Decimal("0.001"))
            segments_total += segment
            row = next((r for r in rows if r.job_id == job_id and r.attempt == attempt.number
                        and r.kind == "device_seconds"), None)
            if row is None or row.quantity != segment:
                missing_segments.append(f"{job_id} attempt {attempt.number}: row "
                                        f"{row.quantity if row else None} != {segment}")
            for kill in kills:
                if kill.job == job_id and kill.attempt == attempt.number:
                    kill.billed_s = segment
                    # A heartbeat sent just before the kill may land just after it (seen:
                    # +0.018 s): allow one heartbeat's flight, never more.
                    if float(segment) > kill.ran_s + HEARTBEAT_S + 0.5:
                        over_billed.append(f"{job_id} attempt {attempt.number}")

    checks = [
        ("kills done", f"{len(kills)}/{requested}", len(kills) == requested),
        ("jobs lost", f"{len(lost_jobs)} of {len(plans)}", not lost_jobs),
        ("jobs with attempts != kills + 1", str(len(wrong_attempts)), not wrong_attempts),
        ("max trainer processes per job (/proc, "
         f"{sampler.samples} samples)", str(max(sampler.max_per_job.values(), default=0)),
         not sampler.overlaps),
        ("retries claimed before their predecessor died", str(len(late_claims)),
         not late_claims),
        ("resumed from a checkpoint", f"{resumed}/{len(kills)}", resumed == len(kills)),
        ("duplicate usage rows", str(duplicates), duplicates == 0),
        ("lost attempts billed past their kill", str(len(over_billed)), not over_billed),
        ("GPU-seconds billed = sum of segments", f"{billed_total} = {segments_total}",
         billed_total == segments_total and not missing_segments),
    ]
    if cap_job:
        job = FineTuningJob.objects.get(id=cap_job)
        attempts = Attempt.objects.filter(job_id=cap_job).count()
        error = job.error or {}
        held = (job.status == "failed" and error.get("code") == "worker_lost"
                and attempts == settings.MAX_ATTEMPTS)
        checks.append((f"cap job (limit {settings.MAX_ATTEMPTS})",
                       f"{job.status}, {attempts} attempts, {error.get('code')}: "
                       f"{error.get('message')}", held))
    for problem in sampler.overlaps[:5] + late_claims[:5] + missing_segments[:5]:
        print(f"  ! {problem}")
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=4, help="jobs the kills are spread over")
    parser.add_argument("--workers", type=int, default=3, help="training workers")
    parser.add_argument("--seed", type=int, default=0, help="picks the steps to kill at")
    parser.add_argument("--cap-job", action="store_true",
                        help="also run a job whose worker dies at every claim")
    parser.add_argument("--var-dir", type=Path, default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    var_dir = configure(args)
    prepare()
    import django

    django.setup()
    from posttrain_server.billing.services import price_book_seed_default
    from posttrain_server.pools.services import pools_seed_defaults
    from posttrain_server.tenancy.services import api_key_create, organization_get_or_create

    pools_seed_defaults()
    price_book_seed_default()
    purge_queues()
    organization = organization_get_or_create(name=f"fault-kill-{uuid.uuid4().hex[:8]}")
    key = api_key_create(organization=organization, name="fault_kill.py").secret

    sampler = RunnerSampler(var_dir)
    port = args.port or free_port()
    print(f"fault_kill: {args.kills} kills over {args.jobs} jobs, {args.workers} workers, "
          f"seed {args.seed}, lease {LEASE_S}s, var {var_dir}", flush=True)
    with Stack(port=port, env=dict(os.environ), log_dir=var_dir / "logs") as stack:
        sampler.start()
        client = httpx.Client(base_url=f"{stack.url}/v1", timeout=60,
                              headers={"Authorization": f"Bearer {key}"})
        try:
            kills, plans, cap_job, wall = drive(args, stack, client)
        finally:
            sampler.stopped.set()
    checks = verify(kills, plans, cap_job, sampler, args.kills)

    print(f"\n{'kill':>4} {'job':<30} {'att':>3} {'target':>6} {'step':>5} {'ckpt':>5} "
          f"{'resumed':>7} {'ran s':>6} {'billed s':>8}")
    for number, kill in enumerate(kills, 1):
        resumed = "-" if kill.resumed_from is None else kill.resumed_from
        billed = "-" if kill.billed_s is None else kill.billed_s
        print(f"{number:>4} {kill.job:<30} {kill.attempt:>3} {kill.target:>6} {kill.step:>5} "
              f"{kill.checkpoint:>5} {resumed:>7} {kill.ran_s:>6.2f} {billed:>8}")
    print(f"\n{'invariant':<52} {'figure':<40} ok")
    for name, figure, held in checks:
        print(f"{name:<52} {figure:<40} {'yes' if held else 'NO'}")
    failed = [name for name, _, held in checks if not held]
    print(f"\nwall time {wall:.0f} s at {datetime.now(UTC):%H:%M:%S} UTC: "
          + ("all invariants held" if not failed else f"FAILED: {', '.join(failed)}"),
          flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
