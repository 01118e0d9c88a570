"""Platform overhead on the SFT path: the same job as a plain TRL script and through Posttrain.

Runs ``benchmarks/plain_trl_sft.py`` (load, eval, train, eval, save: one process) and then the
very same configuration (the demo job) through a fresh embedded stack: upload, ``POST
/v1/fine_tuning/jobs``, wait for ``succeeded``. Prints both wall times side by side and their
ratio. Run it on an idle machine; it is a benchmark, never a test.

    .venv/bin/python benchmarks/sft_overhead.py [--skip-plain]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from demo import DEMO_JOB, DEMO_TRAIN_ROWS, DEMO_VALIDATION_ROWS, create_key, upload  # noqa: E402
from devstack import Stack, prepare  # noqa: E402


def run_plain(out: Path) -> tuple[float, dict]:
    hyper = DEMO_JOB["method"]["supervised"]["hyperparameters"]
    args = [sys.executable, str(ROOT / "benchmarks" / "plain_trl_sft.py"), "--out", str(out),
            "--full", "--seed", str(DEMO_JOB["seed"]), "--train-rows", str(DEMO_TRAIN_ROWS),
            "--eval-rows", str(DEMO_VALIDATION_ROWS), "--epochs", str(hyper["n_epochs"]),
            "--batch-size", str(hyper["batch_size"]),
            # posttrain-tiny's full fine-tuning rate (jobs/base_models.py) x the multiplier
            "--lr", str(2e-3 * hyper["learning_rate_multiplier"]),
            "--warmup", str(DEMO_JOB.get("warmup_ratio", 0.0)),
            "--scheduler", DEMO_JOB["lr_scheduler"],
            "--max-length", str(DEMO_JOB["max_seq_length"]), "--no-assistant-only-loss"]
    started = time.perf_counter()
    subprocess.run(args, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started, json.loads((out / "summary.json").read_text())


def run_platform(var_dir: Path, port: int) -> tuple[float, dict]:
    os.environ["POSTTRAIN_VAR_DIR"] = str(var_dir)
    from workers.tinymodel import build_tiny_model
    from workers.toytask import addition_rows, write_jsonl

    prepare()
    build_tiny_model(var_dir / "models" / "posttrain-tiny")  # as the plain script's load
    train = write_jsonl(var_dir / "train.jsonl", addition_rows(DEMO_TRAIN_ROWS, 0, "train"))
    valid = write_jsonl(var_dir / "valid.jsonl",
                        addition_rows(DEMO_VALIDATION_ROWS, 0, "validation"))
    key = create_key()
    with Stack(port=port, log_dir=var_dir / "logs"):
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}/v1", timeout=60,
                              headers={"Authorization": f"Bearer {key}"})
        train_file, valid_file = upload(client, train), upload(client, valid)
        started = time.perf_counter()
        job = client.post("/fine_tuning/jobs", json={
            **DEMO_JOB, "training_file": train_file["id"], "validation_file": valid_file["id"],
        }).raise_for_status().json()
        while job["status"] not in {"succeeded", "failed", "cancelled"}:
            time.sleep(0.25)  # a client polling, like the SDK; 10 Hz would tax 2 cores
            job = client.get(f"/fine_tuning/jobs/{job['id']}").json()
        elapsed = time.perf_counter() - started
    if job["status"] != "succeeded":
        raise SystemExit(f"platform job ended {job['status']}: {job['error']}")
    return elapsed, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8077)
    parser.add_argument("--repeat", type=int, default=3,
                        help="alternating runs of each; medians are compared")
    parser.add_argument("--skip-plain", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep logs and data in this folder")
    args = parser.parse_args()
    plain_times: list[float] = []
    platform_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="posttrain-bench-") as scratch:
        tmp = Path(args.keep or scratch)
        for run in range(args.repeat):
            if not args.skip_plain:
                seconds, plain = run_plain(tmp / f"plain-{run}")
                plain_times.append(seconds)
                print(f"run {run + 1}: plain TRL {seconds:.1f} s", flush=True)
            seconds, job = run_platform(tmp / f"platform-{run}", args.port)
            platform_times.append(seconds)
            print(f"run {run + 1}: Posttrain {seconds:.1f} s", flush=True)
    platform_s = statistics.median(platform_times)
    print("\nSFT overhead benchmark (same configuration, this machine, "
          f"median of {args.repeat} alternating runs)")
    print(f"{'':24}{'plain TRL':>14}{'Posttrain':>14}")
    if plain_times:
        plain_s = statistics.median(plain_times)
        print(f"{'wall time (s)':24}{plain_s:>14.1f}{platform_s:>14.1f}")
        print(f"{'  all runs':24}{' '.join(f'{t:.1f}' for t in plain_times):>16}"
              f"{' '.join(f'{t:.1f}' for t in platform_times):>16}")
        print(f"{'trained tokens':24}{plain['num_tokens']:>14,}{job['trained_tokens']:>14,}")
        print(f"{'exact match before':24}{plain['exact_match_before']:>14.3f}"
              f"{job['eval']['before']:>14.3f}")
        print(f"{'exact match after':24}{plain['exact_match_after']:>14.3f}"
              f"{job['eval']['after']:>14.3f}")
        print(f"\nratio Posttrain / plain: {platform_s / plain_s:.3f} (target <= 1.05)")
    else:
        print(f"{'wall time (s)':24}{'-':>14}{platform_s:>14.1f}")
    print(f"Posttrain job cost ${job['cost']['total']}, device-seconds "
          f"{job['usage']['device_seconds']}")


if __name__ == "__main__":
    main()
