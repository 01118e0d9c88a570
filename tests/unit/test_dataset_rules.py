"""Dataset validation rules: every problem is reported with the 1-based line a user sees."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from workers.dataset_rules import MAX_REPORTED_ERRORS, Limits, validate_jsonl

LIMITS = Limits(max_line_bytes=1024, min_examples=10)


def chat(user: str = "What is 2+2?", answer: str = "4", **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": "You are terse."},
                         {"role": "user", "content": user},
                         {"role": "assistant", "content": answer}], **extra}


def line(row: Any) -> bytes:
    return json.dumps(row).encode() + b"\n"


def good_lines(count: int) -> list[bytes]:
    return [line(chat(f"question {i}", f"answer {i}")) for i in range(count)]


def with_bad_line(bad: bytes, *, at: int, total: int = 12) -> bytes:
    """``total`` lines, all good except line number ``at`` (1-based), which is ``bad``."""
    rows = good_lines(total)
    rows[at - 1] = bad if bad.endswith(b"\n") else bad + b"\n"
    return b"".join(rows)


def check(data: bytes, limits: Limits = LIMITS):
    return validate_jsonl(io.BytesIO(data), limits=limits)


def error_lines(report) -> list[int | None]:
    return [error["line"] for error in report.errors]


def test_it_accepts_a_valid_chat_file_and_counts_its_examples():
    report = check(b"".join(good_lines(12)))

    assert report.ok
    assert report.format == "chat"
    assert report.example_count == 12
    assert report.line_count == 12
    assert report.error_count == 0
    assert report.errors == []
    assert report.as_dict()["example_count"] == 12
    assert report.summary() == "12 chat examples"


def test_it_accepts_crlf_line_endings_a_missing_final_newline_and_blank_lines():
    rows = [row.replace(b"\n", b"\r\n") for row in good_lines(10)]
    data = b"".join(rows[:5]) + b"\r\n" + b"".join(rows[5:]).rstrip(b"\r\n")

    report = check(data)

    assert report.ok, report.errors
    assert report.example_count == 10
    assert report.line_count == 11


def test_it_accepts_assistant_weights_of_zero_and_one():
    row = {"messages": [{"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "draft", "weight": 0},
                        {"role": "user", "content": "again"},
                        {"role": "assistant", "content": "final", "weight": 1}]}
    report = check(b"".join([line(row)] * 10))

    assert report.ok, report.errors
    assert report.example_count == 10


@pytest.mark.parametrize(("bad", "message_part"), [
    pytest.param(b'{"messages": [{"role": "user", "content": "hi"}', "invalid JSON",
                 id="malformed-json"),
    pytest.param(b'["messages"]', "must be a JSON object", id="array-line"),
    pytest.param(b'"just a string"', "must be a JSON object", id="string-line"),
    pytest.param(b"42", "must be a JSON object", id="number-line"),
    pytest.param(b'{"prompt": "hi", "completion": "there"}', "unknown format",
                 id="legacy-completion-format"),
    pytest.param(b'{"messages": []}', "non-empty list", id="empty-messages"),
    pytest.param(b'{"messages": "hi"}', "non-empty list", id="messages-not-a-list"),
    pytest.param(b'{"messages": ["hi"]}', "messages[0] must be an object", id="message-string"),
])
def test_it_reports_a_shape_error_on_the_exact_line(bad, message_part):
    report = check(with_bad_line(bad, at=7))

    assert not report.ok
    assert error_lines(report) == [7]
    assert message_part in report.errors[0]["message"]
    assert report.example_count == 11
    assert report.line_count == 12


@pytest.mark.parametrize(("messages", "message_part"), [
    pytest.param([{"role": "bot", "content": "hi"}, {"role": "assistant", "content": "x"}],
                 "messages[0].role 'bot' is not one of", id="unknown-role"),
    pytest.param([{"content": "hi"}, {"role": "assistant", "content": "x"}],
                 "messages[0].role None", id="missing-role"),
    pytest.param([{"role": "system", "content": "s"}, {"role": "assistant", "content": "x"}],
                 "needs at least one user message", id="missing-user"),
    pytest.param([{"role": "user", "content": "hi"}],
                 "needs at least one assistant message", id="missing-assistant"),
    pytest.param([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"},
                  {"role": "user", "content": "and?"}],
                 "the last message must be from the assistant", id="last-not-assistant"),
    pytest.param([{"role": "user", "content": "hi"}, {"role": "assistant", "content": " \n"}],
                 "messages[1].content is empty", id="blank-content"),
    pytest.param([{"role": "user", "content": ""}, {"role": "assistant", "content": "x"}],
                 "messages[0].content is empty", id="empty-content"),
    pytest.param([{"role": "user", "content": 5}, {"role": "assistant", "content": "x"}],
                 "messages[0].content must be a string", id="number-content"),
    pytest.param([{"role": "user", "content": "hi"}, {"role": "assistant"}],
                 "messages[1].content must be a string", id="missing-content"),
    pytest.param([{"role": "user", "content": None}, {"role": "assistant", "content": "x"}],
                 "messages[0].content must be a string", id="null-content"),
    pytest.param([{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": "x", "weight": 2}],
                 "messages[1].weight must be 0 or 1", id="weight-two"),
    pytest.param([{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": "x", "weight": "1"}],
                 "messages[1].weight must be 0 or 1", id="weight-string"),
    pytest.param([{"role": "user", "content": "hi", "weight": 1},
                  {"role": "assistant", "content": "x"}],
                 "messages[0].weight must be 0 or 1, on assistant messages only",
                 id="weight-on-user"),
])
def test_it_reports_a_message_error_on_the_exact_line(messages, message_part):
    report = check(with_bad_line(line({"messages": messages}), at=3))

    assert not report.ok
    assert error_lines(report) == [3]
    assert message_part in report.errors[0]["message"]
    assert report.example_count == 11


def test_it_reports_a_role_that_is_not_a_string_instead_of_crashing():
    bad = line({"messages": [{"role": ["user"], "content": "hi"},
                             {"role": "assistant", "content": "x"}]})

    report = check(with_bad_line(bad, at=4))

    assert error_lines(report) == [4]
    assert "role" in report.errors[0]["message"]


def test_it_reports_every_message_error_of_one_line_on_that_line():
    bad = line({"messages": [{"role": "user", "content": 1},
                             {"role": "robot", "content": "x"},
                             {"role": "assistant", "content": ""}]})

    report = check(with_bad_line(bad, at=2))

    assert error_lines(report) == [2, 2, 2]
    assert report.error_count == 3


def test_it_reports_bytes_that_are_not_utf8_with_their_position():
    report = check(with_bad_line(b'{"messages": "caf\xe9"}', at=5))

    assert error_lines(report) == [5]
    assert report.errors[0]["message"] == "not valid UTF-8 (byte 18 of the line)"


def test_it_reports_a_nul_character():
    good = good_lines(1)[0].rstrip(b"\n")
    report = check(with_bad_line(good[:-2] + b"\x00" + good[-2:], at=9))

    assert error_lines(report) == [9]
    assert "NUL" in report.errors[0]["message"]


def test_it_reports_a_byte_order_mark_at_the_start_on_line_one():
    rows = good_lines(12)
    report = check(b"\xef\xbb\xbf" + b"".join(rows))

    assert error_lines(report) == [1]
    assert "byte order mark" in report.errors[0]["message"]
    assert report.line_count == 12
    assert report.example_count == 11


def test_it_reports_a_line_over_the_byte_limit_and_keeps_counting_lines_after_it():
    limits = Limits(max_line_bytes=200, min_examples=1)
    long_row = line(chat("x" * 5000))  # 25x the limit: skipped in pieces, never parsed
    rows = good_lines(3) + [long_row] + good_lines(3)
    rows[5] = b"not json\n"  # line 6: an error after the long line keeps its true number

    report = check(b"".join(rows), limits)

    assert error_lines(report) == [4, 6]
    assert report.errors[0]["message"] == "line is longer than 200 bytes"
    assert report.line_count == 7
    assert report.example_count == 5


def test_a_line_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not():
    limits = Limits(max_line_bytes=200, min_examples=1)
    base = line(chat("q", "a")).rstrip(b"\n")
    pad = 200 - len(base[:-1] + b', "pad": ""}')
    exact = base[:-1] + b', "pad": "' + b"p" * pad + b'"}'
    over = base[:-1] + b', "pad": "' + b"p" * (pad + 1) + b'"}'
    assert len(exact) == 200 and len(over) == 201

    report = check(exact + b"\r\n" + over + b"\n" + exact, limits)

    assert error_lines(report) == [2]
    assert report.example_count == 2
    assert report.line_count == 3


def test_it_reports_an_empty_file_without_a_line_number():
    report = check(b"")

    assert not report.ok
    assert report.errors == [{"line": None, "message": "file is empty"}]
    assert report.line_count == 0
    assert report.summary() == "file is empty"


def test_it_reports_too_few_examples_without_a_line_number():
    report = check(b"".join(good_lines(9)))

    assert not report.ok
    assert report.errors == [{"line": None, "message": "needs at least 10 examples, found 9"}]
    assert report.example_count == 9


def test_a_file_of_blank_lines_has_too_few_examples():
    report = check(b"\n\n  \n")

    assert error_lines(report) == [None]
    assert "found 0" in report.errors[0]["message"]
    assert report.line_count == 3


def test_it_reports_deep_nesting_instead_of_crashing():
    report = check(with_bad_line(b"[" * 100_000, at=2), Limits(max_line_bytes=200_000))

    assert error_lines(report) == [2]
    assert "nested too deeply" in report.errors[0]["message"]
    assert report.example_count == 11


def test_it_reports_a_preference_row_in_a_chat_file():
    preference = line({"input": {"messages": [{"role": "user", "content": "hi"}]},
                       "preferred_output": [{"role": "assistant", "content": "a"}],
                       "non_preferred_output": [{"role": "assistant", "content": "b"}]})

    report = check(with_bad_line(preference, at=6))

    assert error_lines(report) == [6]
    assert report.errors[0]["message"] == "preference example in a chat dataset"
    assert report.format == "chat"


def test_a_chat_row_in_a_file_that_starts_with_preference_rows_is_reported():
    preference = line({"input": {"messages": []}, "preferred_output": []})
    report = check(preference + b"".join(good_lines(2)))

    assert error_lines(report)[:3] == [1, 1, 1] and error_lines(report)[-2:] == [2, 3]
    assert report.errors[0]["message"] == "'input.messages' must be a non-empty list"
    assert report.errors[-1]["message"] == "chat example in a preference dataset"


def test_it_caps_the_error_list_but_counts_every_error():
    report = check(b"".join(b"oops\n" for _ in range(50)))

    assert report.error_count == 50
    assert len(report.errors) == MAX_REPORTED_ERRORS == 20
    assert error_lines(report) == list(range(1, 21))
    assert report.summary().endswith("(and 49 more errors)")
    assert report.summary().startswith("line 1: invalid JSON")


def test_errors_on_several_lines_keep_their_own_line_numbers():
    rows = good_lines(15)
    rows[0] = b"{bad\n"
    rows[9] = b"[]\n"
    rows[14] = line({"messages": [{"role": "user", "content": "only a question"}]})

    report = check(b"".join(rows))

    assert error_lines(report) == [1, 10, 15]
    assert report.example_count == 12


def preference(prompt: str = "2+2=", good: str = "4", bad: str = "5") -> dict[str, Any]:
    return {"input": {"messages": [{"role": "user", "content": prompt}]},
            "preferred_output": [{"role": "assistant", "content": good}],
            "non_preferred_output": [{"role": "assistant", "content": bad}]}


def rft(prompt: str = "2+2=", **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt}], "reference_answer": "4", **extra}


def test_a_preference_file_is_accepted_with_its_format():
    report = check(b"".join(line(preference(f"{i}+1=", str(i + 1), str(i))) for i in range(12)))

    assert report.ok, report.errors
    assert report.format == "preference"
    assert report.example_count == 12


@pytest.mark.parametrize(("row", "message_part"), [
    pytest.param({**preference(), "input": {"messages": []}},
                 "'input.messages' must be a non-empty list", id="empty-input"),
    pytest.param({**preference(), "input": "2+2="}, "'input' must be an object", id="str-input"),
    pytest.param({**preference(), "preferred_output": [{"role": "user", "content": "4"}]},
                 "preferred_output[0].role must be 'assistant'", id="preferred-role"),
    pytest.param({**preference(), "non_preferred_output": "5"},
                 "'non_preferred_output' must be a list", id="rejected-not-list"),
    pytest.param({k: v for k, v in preference().items() if k != "non_preferred_output"},
                 "'non_preferred_output' must be a list", id="rejected-missing"),
    pytest.param(preference(bad="4"), "are the same answer", id="same-answers"),
    pytest.param({**preference(), "input": {"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]}},
        "must not end with an assistant message", id="input-ends-assistant"),
])
def test_it_reports_a_bad_preference_row_on_its_line(row, message_part):
    rows = [line(preference(f"{i}+1=", str(i + 1), str(i))) for i in range(12)]
    rows[4] = line(row)

    report = check(b"".join(rows))

    assert error_lines(report) == [5]
    assert message_part in report.errors[0]["message"]
    assert report.example_count == 11


def test_a_reinforcement_file_is_accepted_and_keeps_extra_keys_legal():
    report = check(b"".join(line(rft(f"{i}+2=", tags=["x"])) for i in range(12)))

    assert report.ok, report.errors
    assert report.format == "reinforcement"


def test_it_reports_a_chat_row_in_a_reinforcement_file_by_the_reinforcement_rule():
    rows = [line(rft(f"{i}+2=")) for i in range(12)]
    rows[8] = line(chat())

    report = check(b"".join(rows))

    assert error_lines(report) == [9]
    assert "the last message must be from the user" in report.errors[0]["message"]


def test_it_reports_a_reinforcement_prompt_with_a_bad_message_on_its_line():
    rows = [line(rft(f"{i}+2=")) for i in range(12)]
    rows[2] = line({"messages": [{"role": "user", "content": 3}]})

    report = check(b"".join(rows))

    assert error_lines(report) == [3]
    assert "messages[0].content must be a string" in report.errors[0]["message"]


def test_a_chat_file_whose_first_row_lacks_its_answer_is_still_a_chat_file():
    rows = good_lines(12)
    rows[0] = line({"messages": [{"role": "user", "content": "hi"}]})

    report = check(b"".join(rows))

    assert report.format == "chat"
    assert error_lines(report) == [1]
    assert "needs at least one assistant message" in report.errors[0]["message"]
    assert report.example_count == 11
