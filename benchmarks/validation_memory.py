"""Peak memory of dataset validation on a 500 MB file: streaming rules vs loading it whole.

The platform validates uploads line by line on a bounded buffer (``dataset_rules``); this
prints the peak RSS of that next to a naive baseline that parses the whole file into memory,
each in a fresh process, with the time taken. A benchmark, never a test.

    .venv/bin/python benchmarks/validation_memory.py [--megabytes 500] [--skip-naive]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STREAMING = """
import resource, sys, time
sys.path[:0] = [{root!r}, {sdk!r}]
from workers.dataset_rules import validate_jsonl
start = time.perf_counter()
with open({path!r}, "rb") as stream:
    report = validate_jsonl(stream)
print(report.line_count, report.error_count, round(time.perf_counter() - start, 1),
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

NAIVE = """
import json, resource, time
start = time.perf_counter()
rows, errors = [], 0
with open({path!r}, "rb") as stream:
    for line in stream.read().decode("utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # the file has malformed lines on purpose
            errors += 1
print(len(rows) + errors, errors, round(time.perf_counter() - start, 1),
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_dataset(path: Path, megabytes: int) -> int:
    """Chat rows of realistic size, with a malformed line every 100,000 rows."""
    target = megabytes * 1024 * 1024
    written = rows = 0
    with path.open("wb") as out:
        while written < target:
            rows += 1
            if rows % 100_000 == 0:
                line = b'{"messages": [{"role": "user"\n'
            else:
                line = json.dumps({"messages": [
                    {"role": "system", "content": "You are a careful assistant. " * 4},
                    {"role": "user", "content": f"Question {rows}: what is {rows} + {rows}?"},
                    {"role": "assistant", "content": f"The answer is {2 * rows}. " * 3},
                ]}).encode() + b"\n"
            out.write(line)
            written += len(line)
    return rows


def run(program: str, path: Path) -> tuple[str, ...]:
    code = program.format(root=str(ROOT), sdk=str(ROOT / "sdk" / "src"), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    return tuple(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument("--skip-naive", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="posttrain-validation-") as tmp:
        path = Path(tmp) / "big.jsonl"
        started = time.perf_counter()
        rows = write_dataset(path, args.megabytes)
        print(f"wrote {path.stat().st_size / 2**20:,.0f} MiB, {rows:,} lines in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        results = {"streaming rules (Posttrain)": run(STREAMING, path)}
        if not args.skip_naive:
            results["naive: parse all in memory"] = run(NAIVE, path)
    print(f"\n{'':32}{'lines':>12}{'errors':>8}{'seconds':>9}{'peak RSS MiB':>14}")
    for name, (lines, errors, seconds, rss_kib) in results.items():
        print(f"{name:32}{int(lines):>12,}{int(errors):>8}{float(seconds):>9.1f}"
              f"{int(rss_kib) / 1024:>14,.0f}")


if __name__ == "__main__":
    main()
