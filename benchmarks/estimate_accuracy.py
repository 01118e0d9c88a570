"""Estimate accuracy: what ``POST /v1/fine_tuning/jobs/estimate`` said vs what the job billed.

On a fresh embedded stack (cpu pool, tiny model): runs a few calibration jobs, calibrates the
``cpu`` pool with ``manage.py calibrate_pool cpu --size tiny``, then for a set of jobs of
different sizes asks for an estimate, runs the job with the estimate's seed and prints the
estimated and billed trained tokens (must be equal), eval tokens (the bill's must lie between
the estimate's exact part and its bound), GPU-hours and dollars side by side with the relative
error. A benchmark, never a test: timings depend on the machine's load.

    .venv/bin/python benchmarks/estimate_accuracy.py [--var-dir DIR] [--port 8765]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from demo import create_key, upload  # noqa: E402
from devstack import Stack, prepare  # noqa: E402

# A fresh stack's first job pays cold caches (imports, model files): one warm-up job, left
# out of the calibration (``--limit``), as a pool calibrated from its own recent jobs would.
WARM_UP = (200, 1)
CALIBRATION = [(200, 1), (800, 1), (1600, 1)]  # (training rows, epochs)
MEASURED = [(400, 1), (600, 2), (1200, 1), (2000, 1)]


def run_job(client: httpx.Client, file_id: str, epochs: int) -> tuple[dict, dict]:
    body = {"model": "posttrain-tiny", "training_file": file_id, "eval_samples": 20,
            "pool": "cpu", "method": {"type": "supervised", "supervised": {
                "hyperparameters": {"n_epochs": epochs, "batch_size": 16}}}}
    estimate = client.post("/fine_tuning/jobs/estimate", json=body).raise_for_status().json()
    job = client.post("/fine_tuning/jobs", json={**body, "seed": estimate["seed"]})
    job_id = job.raise_for_status().json()["id"]
    while (done := client.get(f"/fine_tuning/jobs/{job_id}").json())["status"] not in {
            "succeeded", "failed", "cancelled"}:
        time.sleep(0.5)
    return estimate, done


def error(estimated: Decimal, billed: Decimal) -> str:
    return f"{(estimated - billed) / billed * 100:+.1f}%" if billed else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--var-dir", type=Path,
                        default=Path(tempfile.mkdtemp(prefix="posttrain-estimates-")))
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    os.environ["POSTTRAIN_VAR_DIR"] = str(args.var_dir)
    from workers.toytask import addition_rows, write_jsonl

    prepare()
    key = create_key()
    files = {rows: write_jsonl(args.var_dir / f"train-{rows}.jsonl",
                               addition_rows(rows, 0, "train"))
             for rows in {rows for rows, _ in CALIBRATION + MEASURED}}
    with Stack(port=args.port, log_dir=args.var_dir / "logs"):
        client = httpx.Client(base_url=f"http://127.0.0.1:{args.port}/v1", timeout=120,
                              headers={"Authorization": f"Bearer {key}"})
        uploaded = {rows: upload(client, path)["id"] for rows, path in files.items()}
        print("calibration jobs (after one warm-up job):", flush=True)
        run_job(client, uploaded[WARM_UP[0]], WARM_UP[1])
        for rows, epochs in CALIBRATION:
            _, done = run_job(client, uploaded[rows], epochs)
            print(f"  {rows} rows x {epochs}: {done['status']}, {done['trained_tokens']} "
                  f"tokens, {done['usage']['eval_tokens']} eval tokens, "
                  f"{done['usage']['device_seconds']} GPU-s", flush=True)
        out = subprocess.run([sys.executable, str(ROOT / "manage.py"), "calibrate_pool", "cpu",
                              "--size", "tiny", "--limit", str(len(CALIBRATION))], check=True,
                             capture_output=True, text=True, cwd=ROOT)
        print(out.stdout.strip(), flush=True)
        header = (f"{'job':>12} | {'tokens est':>10} {'billed':>8} | "
                  f"{'eval read..max':>15} {'billed':>7} | {'GPU-h est':>10} "
                  f"{'billed':>10} {'err':>7} | {'$ est':>9} {'billed':>9} {'err':>7}")
        print(header)
        print("-" * len(header))
        errors = []
        for rows, epochs in MEASURED:
            estimate, done = run_job(client, uploaded[rows], epochs)
            cpu = next(p for p in estimate["pools"] if p["pool"] == "cpu")
            hours_est = Decimal(cpu["gpu_hours"])
            hours_billed = Decimal(done["usage"]["device_seconds"]) / 3600
            cost_est, cost_billed = Decimal(cpu["cost"]["total"]), Decimal(done["cost"]["total"])
            errors.append(abs(hours_est - hours_billed) / hours_billed)
            match = "==" if estimate["trained_tokens"] == done["trained_tokens"] else "!="
            evals = done["usage"]["eval_tokens"]
            inside = "ok" if estimate["eval_tokens_read"] <= evals <= estimate[
                "eval_tokens"] else "OUT"
            print(f"{f'{rows}x{epochs}':>12} | {estimate['trained_tokens']:>10} "
                  f"{match}{done['trained_tokens']:>6} | "
                  f"{estimate['eval_tokens_read']:>7}..{estimate['eval_tokens']:<6} "
                  f"{evals:>5}{inside:>2} | {hours_est:>10.6f} "
                  f"{hours_billed:>10.6f} {error(hours_est, hours_billed):>7} | "
                  f"{cost_est:>9} {cost_billed:>9} {error(cost_est, cost_billed):>7}",
                  flush=True)
        print(f"mean absolute GPU-hours error: {sum(errors) / len(errors) * 100:.1f}% "
              "(target: within 10%)")


if __name__ == "__main__":
    main()
