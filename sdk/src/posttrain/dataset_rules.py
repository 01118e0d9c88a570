"""Dataset validation rules: one implementation for the server, the worker and local checks.

A dataset is JSONL: strict UTF-8, one JSON object per line. The rules are checked line by line
on a bounded buffer, so a 500 MB upload is validated in constant memory, and every problem is
reported with its 1-based line number, the way a user finds it in an editor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

CHAT_ROLES = {"system", "developer", "user", "assistant"}
MAX_REPORTED_ERRORS = 20


@dataclass(frozen=True)
class Limits:
    max_line_bytes: int = 1024 * 1024
    min_examples: int = 10


@dataclass
class Report:
    """What a user sees on the file object: the format found and the first errors by line."""

    format: str | None = None
    line_count: int = 0
    example_count: int = 0
    error_count: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def add_error(self, line: int | None, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append({"line": line, "message": message})

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "line_count": self.line_count,
            "example_count": self.example_count,
            "error_count": self.error_count,
            "errors": self.errors,
        }

    def summary(self) -> str:
        if self.ok:
            return f"{self.example_count} {self.format} examples"
        first = self.errors[0]
        where = f"line {first['line']}: " if first["line"] else ""
        more = f" (and {self.error_count - 1} more errors)" if self.error_count > 1 else ""
        return f"{where}{first['message']}{more}"


def detect_format(row: dict[str, Any]) -> str | None:
    """The row's format by its shape; a conversation that ends on a user turn is a prompt
    for reinforcement fine-tuning (OpenAI's RFT format), anything else with messages is chat."""
    if "messages" in row:
        messages = row["messages"]
        if (isinstance(messages, list) and messages and isinstance(messages[-1], dict)
                and messages[-1].get("role") == "user"):
            return "reinforcement"
        return "chat"
    if "input" in row and "preferred_output" in row:
        return "preference"
    return None


def _message_errors(messages: Any, prefix: str = "messages") -> tuple[list[str], list[str]]:
    """(errors, roles) of a list of chat messages; shared by every format that holds one."""
    if not isinstance(messages, list) or not messages:
        return [f"'{prefix}' must be a non-empty list"], []
    errors: list[str] = []
    roles: list[str] = []
    for index, message in enumerate(messages):
        where = f"{prefix}[{index}]"
        if not isinstance(message, dict):
            errors.append(f"{where} must be an object")
            continue
        role = message.get("role")
        if not isinstance(role, str) or role not in CHAT_ROLES:
            errors.append(
                f"{where}.role {role!r} is not one of {', '.join(sorted(CHAT_ROLES))}"
            )
            continue
        roles.append(role)
        content = message.get("content")
        if not isinstance(content, str):
            errors.append(f"{where}.content must be a string")
        elif not content.strip():
            errors.append(f"{where}.content is empty")
        elif "\x00" in content:
            errors.append(f"{where}.content contains a NUL character")
        weight = message.get("weight")
        if weight is not None and (role != "assistant" or weight not in (0, 1)):
            errors.append(f"{where}.weight must be 0 or 1, on assistant messages only")
    return errors, roles


def chat_row_errors(row: dict[str, Any]) -> list[str]:
    """Why one chat example cannot be trained on (empty when it can)."""
    errors, roles = _message_errors(row.get("messages"))
    if errors:
        return errors
    if "user" not in roles:
        errors.append("needs at least one user message")
    if "assistant" not in roles:
        errors.append("needs at least one assistant message")
    elif roles[-1] != "assistant":
        errors.append("the last message must be from the assistant")
    return errors


def reinforcement_row_errors(row: dict[str, Any]) -> list[str]:
    """OpenAI's RFT format: a prompt ending with a user turn; other keys are for graders."""
    errors, roles = _message_errors(row.get("messages"))
    if errors:
        return errors
    if roles[-1] != "user":
        return ["the last message must be from the user (the model answers it)"]
    if "assistant" in roles:
        return ["reinforcement prompts must not contain assistant messages"]
    return []


def _output_errors(output: Any, name: str) -> list[str]:
    if not isinstance(output, list) or len(output) != 1 or not isinstance(output[0], dict):
        return [f"'{name}' must be a list holding one assistant message"]
    message = output[0]
    if message.get("role") != "assistant":
        return [f"{name}[0].role must be 'assistant'"]
    content = message.get("content")
    if not isinstance(content, str):
        return [f"{name}[0].content must be a string"]
    if not content.strip():
        return [f"{name}[0].content is empty"]
    if "\x00" in content:
        return [f"{name}[0].content contains a NUL character"]
    return []


def preference_row_errors(row: dict[str, Any]) -> list[str]:
    """OpenAI's DPO format: a prompt (``input.messages``) and a preferred and a
    non-preferred assistant answer to it."""
    source = row.get("input")
    if not isinstance(source, dict):
        return ["'input' must be an object with a 'messages' list"]
    errors, roles = _message_errors(source.get("messages"), "input.messages")
    if not errors and "user" not in roles:
        errors.append("input.messages needs at least one user message")
    elif not errors and roles[-1] == "assistant":
        errors.append("input.messages must not end with an assistant message (the answers "
                      "go in preferred_output and non_preferred_output)")
    errors += _output_errors(row.get("preferred_output"), "preferred_output")
    errors += _output_errors(row.get("non_preferred_output"), "non_preferred_output")
    if not errors and (row["preferred_output"][0]["content"].strip()
                       == row["non_preferred_output"][0]["content"].strip()):
        errors.append("preferred_output and non_preferred_output are the same answer")
    return errors


ROW_CHECKS = {"chat": chat_row_errors, "preference": preference_row_errors,
              "reinforcement": reinforcement_row_errors}
# Formats told apart only by the last message's role (see ``validate_jsonl``).
_MESSAGE_FORMATS = ("chat", "reinforcement")


def _lines(stream: BinaryIO, limit: int) -> Iterable[tuple[int, bytes | None]]:
    """Yield (line number, raw line); None for a line longer than ``limit`` (skipped unread)."""
    number = 0
    while True:
        chunk = stream.readline(limit + 2)
        if not chunk:
            return
        number += 1
        if len(chunk.rstrip(b"\r\n")) > limit:
            while chunk and not chunk.endswith(b"\n"):
                chunk = stream.readline(1024 * 1024)
            yield number, None
            continue
        yield number, chunk


def validate_jsonl(stream: BinaryIO, *, expected_format: str | None = None,
                   limits: Limits | None = None) -> Report:
    """Check a whole dataset; the stream is read once, in bounded pieces.

    Chat and reinforcement rows differ only in their last message's role, so a file of
    messages is checked under both rules as it streams (each keeping at most its first
    errors), and the file's format is decided at the end by most rows' shape: a chat file
    with a few rows missing their answer is reported as a chat file with those lines wrong.
    """
    limits = limits or Limits()
    report = Report()
    sides = {name: Report() for name in _MESSAGE_FORMATS}
    shapes = dict.fromkeys(_MESSAGE_FORMATS, 0)
    first_shape: str | None = None
    for number, raw in _lines(stream, limits.max_line_bytes):
        report.line_count = number
        row = _parse_line(report, number, raw, limits)
        if row is None:
            continue
        row_format = detect_format(row)
        if row_format is None:
            report.add_error(number, "unknown format: expected a 'messages' list (chat or "
                             "reinforcement) or 'input' and 'preferred_output' (preference)")
            continue
        if row_format in _MESSAGE_FORMATS:
            first_shape = first_shape or row_format
            shapes[row_format] += 1
            row_format = "messages"
        leading = _leading(shapes, first_shape)
        wanted = expected_format or report.format or row_format
        if wanted in _MESSAGE_FORMATS:
            wanted = "messages"
        if row_format != wanted:
            found = leading if row_format == "messages" else row_format
            shown = leading if wanted == "messages" else wanted
            report.add_error(number, f"{found} example in a {shown} dataset")
            continue
        report.format = wanted
        if wanted == "messages":
            for name, side in sides.items():
                _check_row(side, number, ROW_CHECKS[name], row)
            continue
        check = ROW_CHECKS.get(row_format)
        if check is None:
            report.add_error(number, f"{row_format} datasets are not supported yet")
            continue
        _check_row(report, number, check, row)
    if report.format == "messages":
        chosen = (expected_format if expected_format in _MESSAGE_FORMATS
                  else _leading(shapes, first_shape))
        side = sides[chosen]
        report.format = chosen
        report.example_count += side.example_count
        report.error_count += side.error_count
        report.errors = sorted(report.errors + side.errors,
                               key=lambda e: (e["line"] is None, e["line"] or 0)
                               )[:MAX_REPORTED_ERRORS]
    if report.line_count == 0:
        report.add_error(None, "file is empty")
    elif report.ok and report.example_count < limits.min_examples:
        report.add_error(
            None, f"needs at least {limits.min_examples} examples, found {report.example_count}"
        )
    return report


def _leading(shapes: dict[str, int], first: str | None) -> str:
    """The shape of most message rows so far; the first row's on a tie."""
    first = first or "chat"
    other = next(name for name in shapes if name != first)
    return other if shapes[other] > shapes[first] else first


def _check_row(report: Report, number: int, check: Any, row: dict[str, Any]) -> None:
    row_errors = check(row)
    for message in row_errors:
        report.add_error(number, message)
    if not row_errors:
        report.example_count += 1


def _parse_line(report: Report, number: int, raw: bytes | None,
                limits: Limits) -> dict[str, Any] | None:
    """The line's JSON object, or None (with the error recorded, or for a blank line)."""
    if raw is None:
        report.add_error(number, f"line is longer than {limits.max_line_bytes} bytes")
        return None
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        report.add_error(number, "file starts with a UTF-8 byte order mark; save it without")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        report.add_error(number, f"not valid UTF-8 (byte {exc.start + 1} of the line)")
        return None
    if not text.strip():
        return None
    if "\x00" in text:
        report.add_error(number, "contains a NUL character")
        return None
    try:
        row = json.loads(text)
    except RecursionError:
        report.add_error(number, "JSON is nested too deeply")
        return None
    except json.JSONDecodeError as exc:
        report.add_error(number, f"invalid JSON: {exc.msg} at column {exc.colno}")
        return None
    if not isinstance(row, dict):
        report.add_error(number, "each line must be a JSON object")
        return None
    return row


def read_chat_rows(stream: BinaryIO) -> list[dict[str, Any]]:
    """Rows of an already validated chat dataset (the trainer's reader)."""
    rows = []
    for raw in stream:
        text = raw.decode("utf-8").strip()
        if text:
            rows.append(json.loads(text))
    return rows
