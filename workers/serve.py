"""Start a training worker for one pool: ``python -m workers.serve --pool rubin``.

The same as ``POSTTRAIN_POOL=rubin celery -A workers.celery_app worker -Q train.rubin
--concurrency 1 --prefetch-multiplier 1``: one job at a time, only that pool's queue.
"""

from __future__ import annotations

import argparse
import os
import sys

from workers import contract


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pool", default=os.environ.get("POSTTRAIN_POOL", "cpu"),
                        help="the pool this worker serves (default: $POSTTRAIN_POOL or cpu)")
    args, celery_args = parser.parse_known_args(argv)
    os.environ["POSTTRAIN_POOL"] = args.pool
    command = [sys.executable, "-m", "celery", "-A", "workers.celery_app", "worker", "-Q",
               contract.train_queue(args.pool), "--concurrency", "1",
               "--prefetch-multiplier", "1", *celery_args]
    os.execv(sys.executable, command)  # noqa: S606 - our own fixed command line


if __name__ == "__main__":
    main()
