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
            "--batch-size", str(hyper["batch_size"]), "--lr", "2e-3",
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
            time.sleep(0.1)
            job = client.get(f"/fine_tuning/jobs/{job['id']}").json()
        elapsed = time.perf_counter() - started
    if job["status"] != "succeeded":
        raise SystemExit(f"platform job ended {job['status']}: {job['error']}")
    return elapsed, job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8077)
    parser.add_argument("--skip-plain", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="posttrain-bench-") as tmp:
        plain_s, plain = (None, {}) if args.skip_plain else run_plain(Path(tmp) / "plain")
        platform_s, job = run_platform(Path(tmp) / "platform", args.port)
    print("\nSFT overhead benchmark (same configuration, this machine)")
    print(f"{'':24}{'plain TRL':>14}{'Posttrain':>14}")
    if plain:
        print(f"{'wall time (s)':24}{plain_s:>14.1f}{platform_s:>14.1f}")
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
