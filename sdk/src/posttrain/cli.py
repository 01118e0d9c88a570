"""``posttrain``: the command line, built on the SDK only (no HTTP code of its own).

Every command takes ``--json`` (one JSON document on stdout, or one per line for streams) so
scripts never parse tables. Exit codes tell a script what happened without reading output:

====  ==========================================================================
0     success
1     the API refused the request or could not be reached (the message says why)
2     usage error: bad arguments, no API key, a local file that does not exist
3     the job ended ``failed`` (``jobs wait``, ``jobs follow``, ``jobs create --wait``)
4     the job ended ``cancelled`` (same commands)
5     the dataset is invalid (``files check``, ``files upload``): errors by line
====  ==========================================================================

Human output (tables, the progress bar) comes from rich and goes to stdout, progress and
errors to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from posttrain import dataset_rules
from posttrain._exceptions import (
    APIError,
    APIStatusError,
    ConfigurationError,
    FileValidationError,
    PosttrainError,
)

if TYPE_CHECKING:
    from rich.console import Console

    from posttrain._client import Posttrain
    from posttrain.types import FineTuningJob

EXIT_OK = 0
EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_JOB_FAILED = 3
EXIT_JOB_CANCELLED = 4
EXIT_INVALID_DATASET = 5


class UsageError(Exception):
    """A problem with how the command was called (exit code 2)."""


class Output:
    """Where a command writes: JSON documents, or rich tables and lines."""

    def __init__(self, *, as_json: bool) -> None:
        from rich.console import Console

        self.json = as_json
        # Piped output is not wrapped at 80 columns: ids and paths stay on one line for grep.
        wide = None if sys.stdout.isatty() else 200
        self.console: Console = Console(highlight=False, width=wide, soft_wrap=True)
        self.errors: Console = Console(stderr=True, highlight=False, soft_wrap=True)

    def document(self, value: Any) -> None:
        print(json.dumps(_jsonable(value), sort_keys=False), flush=True)

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]],
              title: str | None = None) -> None:
        from rich.table import Table

        table = Table(*columns, title=title, show_lines=False)
        for row in rows:
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        self.console.print(table)

    def fields(self, pairs: Sequence[tuple[str, Any]]) -> None:
        from rich.table import Table

        table = Table(show_header=False, box=None, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for name, value in pairs:
            if value is not None and value != "":
                table.add_row(name, str(value))
        self.console.print(table)

    def line(self, text: str) -> None:
        self.console.print(text, markup=False)

    def error(self, text: str) -> None:
        self.errors.print(text, markup=False, style="red")


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _when(timestamp: int | None) -> str:
    if not timestamp:
        return ""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _loss(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) else ""


def _key_values(items: Sequence[str] | None, option: str) -> dict[str, str] | None:
    if not items:
        return None
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{option} takes KEY=VALUE, got {item!r}")
        pairs[key] = value
    return pairs


def _number(text: str) -> int | float | str:
    """A hyperparameter: ``auto``, an integer or a float."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number, got {text!r}") from None


# --- files ---------------------------------------------------------------------------------

def _validation_lines(out: Output, errors: Sequence[dict[str, Any]], count: int) -> None:
    for error in errors:
        where = f"line {error['line']}: " if error.get("line") else ""
        out.error(f"  {where}{error['message']}")
    if count > len(errors):
        out.error(f"  ... and {count - len(errors)} more")


def files_check(args: argparse.Namespace, out: Output) -> int:
    path = Path(args.path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    limits = dataset_rules.Limits(max_line_bytes=args.max_line_bytes,
                                  min_examples=args.min_examples)
    with path.open("rb") as stream:
        report = dataset_rules.validate_jsonl(stream, limits=limits)
    if out.json:
        out.document({"path": str(path), "ok": report.ok, **report.as_dict()})
    elif report.ok:
        out.line(f"{path}: OK, {report.example_count} {report.format} examples "
                 f"({report.line_count} lines)")
    else:
        out.error(f"{path}: {report.error_count} error(s)")
        _validation_lines(out, report.errors, report.error_count)
    return EXIT_OK if report.ok else EXIT_INVALID_DATASET


def files_upload(args: argparse.Namespace, out: Output) -> int:
    path = Path(args.path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    file = _client(args).files.upload(path, purpose=args.purpose, wait=not args.no_wait)
    if out.json:
        out.document(file)
    else:
        out.line(f"{file.id} {file.status} {file.filename} ({file.bytes} bytes)")
    return EXIT_OK


def files_list(args: argparse.Namespace, out: Output) -> int:
    files = list(islice(_client(args).files.list(purpose=args.purpose), args.limit))
    if out.json:
        out.document(files)
    else:
        out.table(["id", "filename", "bytes", "status", "created"],
                  [(f.id, f.filename, f.bytes, f.status, _when(f.created_at)) for f in files])
    return EXIT_OK


def files_get(args: argparse.Namespace, out: Output) -> int:
    file = _client(args).files.retrieve(args.file_id)
    if out.json:
        out.document(file)
        return EXIT_OK
    report = file.validation
    out.fields([("id", file.id), ("filename", file.filename), ("bytes", file.bytes),
                ("purpose", file.purpose), ("status", file.status),
                ("details", file.status_details), ("created", _when(file.created_at)),
                ("format", report.format if report else None),
                ("examples", report.example_count if report else None)])
    if report and report.errors:
        _validation_lines(out, [issue.model_dump() for issue in report.errors],
                          report.error_count)
    return EXIT_OK


def files_delete(args: argparse.Namespace, out: Output) -> int:
    deleted = _client(args).files.delete(args.file_id)
    if out.json:
        out.document(deleted)
    else:
        out.line(f"{deleted.id} deleted")
    return EXIT_OK


def files_download(args: argparse.Namespace, out: Output) -> int:
    path = _client(args).files.download(args.file_id, args.output)
    if out.json:
        out.document({"id": args.file_id, "path": str(path)})
    else:
        out.line(f"{args.file_id} -> {path}")
    return EXIT_OK


# --- jobs ----------------------------------------------------------------------------------

def _job_fields(job: FineTuningJob) -> list[tuple[str, Any]]:
    progress = job.progress
    evaluation = job.eval
    cost = job.cost
    usage = job.usage
    pairs: list[tuple[str, Any]] = [
        ("id", job.id), ("status", job.status), ("model", job.model),
        ("fine-tuned model", job.fine_tuned_model), ("pool", job.pool),
        ("training type", job.training_type), ("training file", job.training_file),
        ("validation file", job.validation_file), ("created", _when(job.created_at)),
        ("finished", _when(job.finished_at)), ("trained tokens", job.trained_tokens),
    ]
    if progress and progress.step is not None:
        loss = f", loss {progress.train_loss:.4f}" if progress.train_loss is not None else ""
        pairs.append(("progress", f"step {progress.step}/{progress.total_steps}{loss}"))
    if usage:
        pairs.append(("device-seconds", f"{usage.device_seconds} ({usage.devices} x "
                      f"{job.pool})"))
    if cost:
        pairs.append(("cost", f"${cost.total} = ${cost.tokens} tokens + ${cost.compute} "
                      f"compute" + (f" (price table {cost.price_version})"
                                    if cost.price_version else "")))
    if evaluation and evaluation.metric:
        pairs.append(("eval", f"{evaluation.metric}: before {evaluation.before}, after "
                      f"{evaluation.after}, gain {evaluation.gain}, gain per dollar "
                      f"{evaluation.gain_per_dollar}"))
    if job.error and job.error.message:
        pairs.append(("error", f"{job.error.code or ''} {job.error.message}".strip()))
    return pairs


def _job_exit(job: FineTuningJob) -> int:
    return {"failed": EXIT_JOB_FAILED, "cancelled": EXIT_JOB_CANCELLED}.get(job.status, EXIT_OK)


def _method(args: argparse.Namespace) -> dict[str, Any] | None:
    hyper = {name: value for name, value in (("n_epochs", args.n_epochs),
                                             ("batch_size", args.batch_size),
                                             ("learning_rate_multiplier",
                                              args.learning_rate_multiplier))
             if value is not None}
    if args.method is None and not hyper:
        return None
    method_type = args.method or "supervised"
    return {"type": method_type, method_type: {"hyperparameters": hyper}}


def _uploaded(client: Posttrain, value: str | None, out: Output) -> str | None:
    """A file id as is; a local path is uploaded first (and validated) and its id used."""
    if value is None or not Path(value).is_file():
        return value
    uploaded = client.files.upload(value)
    if not out.json:
        out.line(f"uploaded {value} as {uploaded.id}")
    return uploaded.id


def _job_body(client: Posttrain, args: argparse.Namespace, out: Output) -> dict[str, Any]:
    """The arguments ``jobs.create`` and ``jobs.estimate`` share, from the options."""
    extra = json.loads(args.body) if args.body else None
    if extra is not None and not isinstance(extra, dict):
        raise UsageError("--body must be a JSON object")
    lora = {key: value for key, value in (("r", args.lora_r), ("alpha", args.lora_alpha))
            if value is not None} or None
    training_file = _uploaded(client, args.training_file, out)
    assert training_file is not None  # required by the parser
    return {"model": args.model, "training_file": training_file,
            "validation_file": _uploaded(client, args.validation_file, out),
            "method": _method(args), "seed": args.seed, "pool": args.pool,
            "training_type": args.training_type, "lora": lora,
            "max_seq_length": args.max_seq_length, "eval_samples": args.eval_samples,
            "extra_body": extra}


def jobs_create(args: argparse.Namespace, out: Output) -> int:
    client = _client(args)
    body = _job_body(client, args, out)
    if args.max_cost is not None:
        body["extra_body"] = {**(body["extra_body"] or {}), "max_cost": args.max_cost}
    job = client.fine_tuning.jobs.create(
        **body, suffix=args.suffix, metadata=_key_values(args.metadata, "--metadata"),
        idempotency_key=args.idempotency_key)
    if args.follow:
        return _follow(client, job.id, out)
    if args.wait:
        if not out.json:
            out.line(f"{job.id} {job.status}")
        return _wait(client, job.id, out)
    if out.json:
        out.document(job)
    else:
        out.line(f"{job.id} {job.status}")
    return EXIT_OK


def _wait(client: Posttrain, job_id: str, out: Output) -> int:
    job = client.fine_tuning.jobs.wait(job_id, progress=not out.json)
    if out.json:
        out.document(job)
    else:
        out.fields(_job_fields(job))
    return _job_exit(job)


def _follow(client: Posttrain, job_id: str, out: Output) -> int:
    for event in client.fine_tuning.jobs.events(job_id, follow=True):
        if out.json:
            out.document({"event": event.model_dump(mode="json")})
        else:
            out.line(f"{_when(event.created_at)} {event.level:5} {event.message}")
    job = client.fine_tuning.jobs.retrieve(job_id)
    if out.json:
        out.document({"job": job.model_dump(mode="json")})
    else:
        out.fields(_job_fields(job))
    return _job_exit(job)


def jobs_list(args: argparse.Namespace, out: Output) -> int:
    pager = _client(args).fine_tuning.jobs.list(
        limit=min(args.limit, 100), metadata=_key_values(args.metadata, "--metadata"))
    jobs = list(islice(pager, args.limit))
    if out.json:
        out.document(jobs)
    else:
        out.table(["id", "status", "model", "fine-tuned model", "pool", "created", "cost"],
                  [(j.id, j.status, j.model, j.fine_tuned_model, j.pool, _when(j.created_at),
                    f"${j.cost.total}" if j.cost else "") for j in jobs])
    return EXIT_OK


def jobs_get(args: argparse.Namespace, out: Output) -> int:
    job = _client(args).fine_tuning.jobs.retrieve(args.job_id)
    if out.json:
        out.document(job)
    else:
        out.fields(_job_fields(job))
    return EXIT_OK


def jobs_cancel(args: argparse.Namespace, out: Output) -> int:
    job = _client(args).fine_tuning.jobs.cancel(args.job_id)
    if out.json:
        out.document(job)
    else:
        note = " (stops at its next step)" if job.status not in ("cancelled",) else ""
        out.line(f"{job.id} {job.status}{note}")
    return EXIT_OK


def jobs_wait(args: argparse.Namespace, out: Output) -> int:
    return _wait(_client(args), args.job_id, out)


def jobs_follow(args: argparse.Namespace, out: Output) -> int:
    return _follow(_client(args), args.job_id, out)


def jobs_checkpoints(args: argparse.Namespace, out: Output) -> int:
    client = _client(args)
    if args.download:
        checkpoint_id, directory = args.download
        path = client.fine_tuning.jobs.download_checkpoint(args.job_id, checkpoint_id,
                                                           directory)
        if out.json:
            out.document({"checkpoint": checkpoint_id, "path": str(path)})
        else:
            out.line(f"{checkpoint_id} -> {path}")
        return EXIT_OK
    checkpoints = list(client.fine_tuning.jobs.checkpoints(args.job_id))
    if out.json:
        out.document(checkpoints)
    else:
        out.table(["id", "step", "checkpoint", "trained tokens", "loss", "created"],
                  [(c.id, c.step_number, c.fine_tuned_model_checkpoint, c.trained_tokens,
                    _loss((c.metrics or {}).get("train_loss")), _when(c.created_at))
                   for c in checkpoints])
    return EXIT_OK


def jobs_pause(args: argparse.Namespace, out: Output) -> int:
    job = _client(args).fine_tuning.jobs.pause(args.job_id)
    if out.json:
        out.document(job)
    else:
        out.line(f"{job.id} {job.status}")
    return EXIT_OK


def jobs_resume(args: argparse.Namespace, out: Output) -> int:
    job = _client(args).fine_tuning.jobs.resume(args.job_id, max_cost=args.max_cost,
                                                clear_max_cost=args.no_max_cost)
    if out.json:
        out.document(job)
    else:
        out.line(f"{job.id} {job.status}")
    return EXIT_OK


def estimate(args: argparse.Namespace, out: Output) -> int:
    client = _client(args)
    quote = client.fine_tuning.jobs.estimate(**_job_body(client, args, out))
    if out.json:
        out.document(quote)
        return EXIT_OK
    out.line(f"{quote.model}, {quote.method}: {quote.trained_tokens} trained tokens "
             f"({quote.n_epochs} epochs, seed {quote.seed}, price table "
             f"{quote.price_version}); pool chosen: {quote.pool}")
    out.table(["pool", "accelerator", "GPUs", "wall time", "GPU-hours", "tokens $",
               "GPU $", "total $", "workers", "in budget"],
              [(p.pool, p.accelerator, p.gpus,
                _duration(p.wall_seconds), p.gpu_hours,
                p.cost.tokens if p.cost else "", p.cost.compute if p.cost else "",
                p.cost.total if p.cost else "", p.workers_online,
                "" if p.within_budget is None else ("yes" if p.within_budget else "no"))
               for p in quote.pools])
    return EXIT_OK


def _duration(seconds: Any) -> str:
    if seconds is None:
        return ""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def usage(args: argparse.Namespace, out: Output) -> int:
    buckets = _client(args).organization.usage(
        start_time=args.start_time, end_time=args.end_time, bucket_width=args.bucket_width,
        group_by=args.group_by.split(",") if args.group_by else None)
    if out.json:
        out.document(buckets)
        return EXIT_OK
    groups = [name for name in ("job_id", "pool", "method")
              if any(getattr(r, name) for b in buckets for r in b.results)]
    out.table(["from", "to", "kind", *groups, "quantity"],
              [(_when(b.start_time), _when(b.end_time), r.kind,
                *(getattr(r, name) for name in groups), r.quantity)
               for b in buckets for r in b.results])
    return EXIT_OK


def invoices_list(args: argparse.Namespace, out: Output) -> int:
    invoices = _client(args).organization.invoices.list()
    if out.json:
        out.document(invoices)
    else:
        out.table(["id", "from", "to", "status", "total $", "lines"],
                  [(i.id, _when(i.period_start), _when(i.period_end), i.status, i.total,
                    len(i.lines)) for i in invoices])
    return EXIT_OK


def invoices_get(args: argparse.Namespace, out: Output) -> int:
    invoice = _client(args).organization.invoices.retrieve(args.invoice_id)
    if out.json:
        out.document(invoice)
        return EXIT_OK
    out.line(f"{invoice.id} {invoice.status} {_when(invoice.period_start)} - "
             f"{_when(invoice.period_end)}: ${invoice.total}")
    out.table(["kind", "pool", "method", "size", "quantity", "unit", "unit price $",
               "amount $"],
              [(line.kind, line.pool, line.method, line.size_class, line.quantity, line.unit,
                line.unit_price, line.amount) for line in invoice.lines])
    return EXIT_OK


def invoices_download(args: argparse.Namespace, out: Output) -> int:
    path = _client(args).organization.invoices.download(args.invoice_id, args.output)
    if out.json:
        out.document({"id": args.invoice_id, "path": str(path)})
    else:
        out.line(f"{args.invoice_id} -> {path}")
    return EXIT_OK


def _json_argument(value: str, option: str) -> Any:
    """Inline JSON, or ``@path`` / an existing path holding JSON."""
    text = value
    candidate = Path(value[1:] if value.startswith("@") else value)
    if value.startswith("@") or (not value.lstrip().startswith(("{", "[")) and
                                 candidate.is_file()):
        if not candidate.is_file():
            raise UsageError(f"{option}: no such file: {candidate}")
        text = candidate.read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc}") from None


def graders_run(args: argparse.Namespace, out: Output) -> int:
    grader = _json_argument(args.grader, "--grader")
    item = _json_argument(args.item, "--item") if args.item else None
    result = _client(args).fine_tuning.alpha.graders.run(grader=grader,
                                                          model_sample=args.sample, item=item)
    if out.json:
        out.document(result)
    else:
        out.fields([("reward", result.reward), ("sub-rewards", result.sub_rewards),
                    ("error", result.error),
                    ("errors", {k: v for k, v in ((result.metadata or {}).get("errors") or {})
                                .items() if v} or None)])
    return EXIT_OK


def graders_validate(args: argparse.Namespace, out: Output) -> int:
    checked = _client(args).fine_tuning.alpha.graders.validate(
        grader=_json_argument(args.grader, "--grader"))
    if out.json:
        out.document(checked)
    else:
        out.line("valid")
    return EXIT_OK


# --- models --------------------------------------------------------------------------------

def models_list(args: argparse.Namespace, out: Output) -> int:
    models = list(_client(args).models.list())
    if out.json:
        out.document(models)
    else:
        out.table(["id", "owned by", "created"],
                  [(m.id, m.owned_by, _when(m.created)) for m in models])
    return EXIT_OK


def models_download(args: argparse.Namespace, out: Output) -> int:
    directory = _client(args).models.download(args.model, args.directory)
    files = sorted(str(p.relative_to(directory)) for p in Path(directory).rglob("*")
                   if p.is_file())
    if out.json:
        out.document({"model": args.model, "path": str(directory), "files": files})
    else:
        out.line(f"{args.model} -> {directory} ({len(files)} files)")
    return EXIT_OK


# --- wiring --------------------------------------------------------------------------------

def _client(args: argparse.Namespace) -> Posttrain:
    from posttrain._client import Posttrain

    return Posttrain(api_key=args.api_key, base_url=args.base_url, max_retries=args.max_retries,
                     timeout=args.timeout)


def _job_body_arguments(sub: argparse.ArgumentParser) -> None:
    """The request body options ``jobs create`` and ``estimate`` share."""
    sub.add_argument("--model", required=True)
    sub.add_argument("--training-file", required=True,
                     help="a file id, or a local JSONL path (uploaded first)")
    sub.add_argument("--validation-file", help="a file id, or a local JSONL path")
    sub.add_argument("--method", choices=["supervised", "dpo", "reinforcement"])
    sub.add_argument("--n-epochs", type=_number)
    sub.add_argument("--batch-size", type=_number)
    sub.add_argument("--learning-rate-multiplier", type=_number)
    sub.add_argument("--seed", type=int)
    sub.add_argument("--pool", help="Posttrain extension: the pool to run on")
    sub.add_argument("--training-type", choices=["lora", "full"])
    sub.add_argument("--lora-r", type=int)
    sub.add_argument("--lora-alpha", type=int)
    sub.add_argument("--max-seq-length", type=int)
    sub.add_argument("--eval-samples", type=int)
    sub.add_argument("--body", help="extra JSON fields for the request body")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON instead of tables")
    common.add_argument("--api-key", help="default: $POSTTRAIN_API_KEY")
    common.add_argument("--base-url", help="default: $POSTTRAIN_BASE_URL, else "
                        "http://127.0.0.1:8000/v1")
    common.add_argument("--max-retries", type=int, default=2, help="retries per request")
    common.add_argument("--timeout", type=float, default=None, help="seconds per request")

    parser = argparse.ArgumentParser(
        prog="posttrain", description="Posttrain: datasets, fine-tuning jobs and models.",
        epilog="Exit codes: 0 ok, 1 API error, 2 usage error, 3 job failed, 4 job cancelled, "
               "5 invalid dataset.")
    from posttrain._version import __version__

    parser.add_argument("--version", action="version", version=f"posttrain {__version__}")
    groups = parser.add_subparsers(
        dest="group", required=True,
        metavar="{files,jobs,estimate,models,usage,invoices,graders}")

    def command(group: Any, name: str, handler: Callable[..., int], help_text: str
                ) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = group.add_parser(name, parents=[common], help=help_text,
                                                        description=help_text)
        sub.set_defaults(handler=handler)
        return sub

    files = groups.add_parser("files", help="upload, list and check datasets")
    files_commands = files.add_subparsers(dest="command", required=True)
    sub = command(files_commands, "check", files_check,
                  "validate a JSONL dataset locally, with the server's own rules")
    sub.add_argument("path")
    sub.add_argument("--max-line-bytes", type=int,
                     default=dataset_rules.Limits().max_line_bytes)
    sub.add_argument("--min-examples", type=int, default=dataset_rules.Limits().min_examples)
    sub = command(files_commands, "upload", files_upload,
                  "upload a dataset and wait for its validation")
    sub.add_argument("path")
    sub.add_argument("--purpose", default="fine-tune")
    sub.add_argument("--no-wait", action="store_true", help="return before validation ends")
    sub = command(files_commands, "list", files_list, "list files, newest first")
    sub.add_argument("--limit", type=int, default=20)
    sub.add_argument("--purpose")
    sub = command(files_commands, "get", files_get, "show a file and its validation report")
    sub.add_argument("file_id")
    sub = command(files_commands, "delete", files_delete, "delete a file")
    sub.add_argument("file_id")
    sub = command(files_commands, "download", files_download, "download a file's content")
    sub.add_argument("file_id")
    sub.add_argument("output", help="path to write")

    jobs = groups.add_parser("jobs", help="create and watch fine-tuning jobs")
    jobs_commands = jobs.add_subparsers(dest="command", required=True)
    sub = command(jobs_commands, "create", jobs_create, "start a fine-tuning job")
    _job_body_arguments(sub)
    sub.add_argument("--suffix")
    sub.add_argument("--metadata", action="append", metavar="KEY=VALUE")
    sub.add_argument("--max-cost", help="Posttrain extension: pause the job at this cost (USD)")
    sub.add_argument("--idempotency-key")
    mode = sub.add_mutually_exclusive_group()
    mode.add_argument("--wait", action="store_true", help="show progress until the job ends")
    mode.add_argument("--follow", action="store_true", help="print events until the job ends")
    sub = command(jobs_commands, "list", jobs_list, "list jobs, newest first")
    sub.add_argument("--limit", type=int, default=20)
    sub.add_argument("--metadata", action="append", metavar="KEY=VALUE")
    for name, handler, text in (
            ("get", jobs_get, "show a job: status, progress, usage, cost, eval"),
            ("cancel", jobs_cancel, "cancel a job (a running one stops at its next step)"),
            ("wait", jobs_wait, "show a progress bar until the job ends"),
            ("follow", jobs_follow, "print the job's events until it ends")):
        sub = command(jobs_commands, name, handler, text)
        sub.add_argument("job_id")
    sub = command(jobs_commands, "pause", jobs_pause,
                  "pause a job (a running one checkpoints and stops at its next step)")
    sub.add_argument("job_id")
    sub = command(jobs_commands, "resume", jobs_resume,
                  "resume a paused job from its checkpoint")
    sub.add_argument("job_id")
    cap = sub.add_mutually_exclusive_group()
    cap.add_argument("--max-cost", help="a new cost cap (USD)")
    cap.add_argument("--no-max-cost", action="store_true", help="remove the cost cap")
    sub = command(jobs_commands, "checkpoints", jobs_checkpoints, "list or download checkpoints")
    sub.add_argument("job_id")
    sub.add_argument("--download", nargs=2, metavar=("CHECKPOINT_ID", "DIR"))

    sub = command(groups, "estimate", estimate,
                  "what a job would cost on every pool, side by side (nothing is written)")
    _job_body_arguments(sub)

    sub = command(groups, "usage", usage, "usage over time, in buckets")
    sub.add_argument("--start-time", type=int, help="Unix seconds (default: 30 days ago)")
    sub.add_argument("--end-time", type=int, help="Unix seconds (default: now)")
    sub.add_argument("--bucket-width", choices=["1d", "1h"])
    sub.add_argument("--group-by", help="comma-separated: job,pool,method,kind")

    invoices = groups.add_parser("invoices", help="monthly invoices")
    invoices_commands = invoices.add_subparsers(dest="command", required=True)
    command(invoices_commands, "list", invoices_list, "one invoice per month")
    sub = command(invoices_commands, "get", invoices_get, "an invoice and its lines")
    sub.add_argument("invoice_id")
    sub = command(invoices_commands, "download", invoices_download, "an invoice as CSV")
    sub.add_argument("invoice_id")
    sub.add_argument("output", help="path to write")

    graders = groups.add_parser("graders", help="try graders on a sample")
    graders_commands = graders.add_subparsers(dest="command", required=True)
    sub = command(graders_commands, "run", graders_run, "score one model sample with a grader")
    sub.add_argument("--grader", required=True, help="the grader as JSON, or @FILE")
    sub.add_argument("--sample", required=True, help="the model's output text")
    sub.add_argument("--item", help="the dataset row as JSON, or @FILE")
    sub = command(graders_commands, "validate", graders_validate, "check a grader")
    sub.add_argument("--grader", required=True, help="the grader as JSON, or @FILE")

    models = groups.add_parser("models", help="list and download models")
    models_commands = models.add_subparsers(dest="command", required=True)
    command(models_commands, "list", models_list, "list base and fine-tuned models")
    sub = command(models_commands, "download", models_download,
                  "download a fine-tuned model (adapter) into a folder")
    sub.add_argument("model")
    sub.add_argument("directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``posttrain`` entry point; returns (and exits with) the exit code."""
    try:
        import rich  # noqa: F401 - the CLI's one extra dependency
    except ImportError:
        print("posttrain: the CLI needs rich: pip install 'posttrain[cli]'", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error
    out = Output(as_json=args.json)
    try:
        code: int = args.handler(args, out)
        return code
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        out.error(f"posttrain: error: {exc}")
        return EXIT_USAGE
    except ConfigurationError as exc:
        out.error(f"posttrain: {exc}")
        return EXIT_USAGE
    except FileValidationError as exc:
        if out.json:
            out.document({"error": {"message": str(exc.args[0]), "errors": exc.errors,
                                    "error_count": exc.error_count}})
        else:
            out.error(str(exc.args[0]))
            _validation_lines(out, exc.errors, exc.error_count)
        return EXIT_INVALID_DATASET
    except APIStatusError as exc:
        if out.json:
            out.document(exc.as_dict())
        out.error(f"posttrain: {exc}")
        return EXIT_API_ERROR
    except (APIError, PosttrainError) as exc:
        out.error(f"posttrain: {exc}")
        return EXIT_API_ERROR
    except KeyboardInterrupt:
        out.error("interrupted")
        return 130
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
