"""``manage.py calibrate_pool cpu --size tiny``: measure a pool's throughput from its jobs."""

from django.core.management.base import BaseCommand, CommandError

from posttrain_server.pools.calibration import pool_calibrate
from posttrain_server.pools.models import Pool


class Command(BaseCommand):
    help = ("Fit a pool's throughput (tokens/s per GPU) and startup seconds for a model size "
            "class from the wall-clock of jobs it finished, and save them.")

    def add_arguments(self, parser):  # noqa: ANN001, ANN201
        parser.add_argument("pool")
        parser.add_argument("--size", default="tiny", help="model size class (default tiny)")
        parser.add_argument("--limit", type=int, default=50, help="newest jobs to use")
        parser.add_argument("--dry-run", action="store_true", help="print, do not save")

    def handle(self, *args: object, **options) -> None:  # noqa: ANN003
        try:
            result = pool_calibrate(pool_name=options["pool"], size_class=options["size"],
                                    limit=options["limit"], save=not options["dry_run"])
        except (ValueError, Pool.DoesNotExist) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"pool {result.pool} ({result.size_class}, {result.jobs} jobs): throughput "
            f"{result.previous_throughput:g} -> {result.throughput:g} tokens/s per GPU, "
            f"startup {result.previous_startup_seconds:g} -> {result.startup_seconds:g} s"
            + (f", eval throughput {result.previous_eval_throughput or 'unset'} -> "
               f"{result.eval_throughput:g} tokens/s" if result.eval_throughput else "")
            + f" (from {result.method.replace('_', ' ')})"
            + (" (not saved)" if options["dry_run"] else ""))
