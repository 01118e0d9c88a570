"""A corpus of malformed datasets, uploaded as a user would: each ends ``error`` with
line-numbered reasons, none gives a 500, none can start a job."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from posttrain_server.files.services import file_validate
from tests.api.conftest import chat_jsonl, upload


def good(i: int = 0) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": f"{i}+1="},
                                    {"role": "assistant", "content": str(i + 1)}]}).encode()


def lines(*rows: bytes) -> bytes:
    return b"\n".join(rows) + b"\n"


def zipped() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("train.jsonl", chat_jsonl(20))
    return buffer.getvalue()


def msg(role, content="hi") -> dict:
    return {"role": role, "content": content}


def row(*messages) -> bytes:
    return json.dumps({"messages": list(messages)}).encode()


OK = [good(i) for i in range(12)]

# name: (content, the 1-based line numbers expected among the reported errors; None = file)
CORPUS: dict[str, tuple[bytes, set[int | None]]] = {
    "empty": (b"", {None}),
    "only blank lines": (b"\n\n\n", {None}),
    "truncated json": (lines(*OK, b'{"messages": [{"role": "user"'), {13}),
    "trailing comma": (lines(b'{"messages": [],}', *OK), {1}),
    "single quotes": (lines(*OK[:5], b"{'messages': []}", *OK[5:]), {6}),
    "plain text": (b"hello world\nthis is not json\n", {1, 2}),
    "csv": (b"prompt,completion\n1+1=,2\n", {1, 2}),
    "top-level array": (lines(b"[1, 2, 3]", *OK), {1}),
    "top-level string": (lines(b'"just a string"', *OK), {1}),
    "top-level number": (lines(*OK, b"42"), {13}),
    "null line": (lines(*OK, b"null"), {13}),
    "messages not a list": (lines(b'{"messages": "hi"}', *OK), {1}),
    "messages empty": (lines(b'{"messages": []}', *OK), {1}),
    "message not an object": (lines(b'{"messages": ["hi"]}', *OK), {1}),
    "unknown role": (lines(row(msg("user"), msg("robot")), *OK), {1}),
    "role not a string": (lines(row(msg("user"), {"role": ["assistant"], "content": "x"}),
                                *OK), {1}),
    "missing role": (lines(row(msg("user"), {"content": "x"}), *OK), {1}),
    "content number": (lines(row(msg("user"), msg("assistant", 5)), *OK), {1}),
    "content null": (lines(row(msg("user"), msg("assistant", None)), *OK), {1}),
    "content empty": (lines(row(msg("user"), msg("assistant", "  ")), *OK), {1}),
    "no user turn": (lines(row(msg("system"), msg("assistant")), *OK), {1}),
    "no assistant turn": (lines(*OK, row(msg("user"))), {13}),
    "ends with user": (lines(row(msg("user"), msg("assistant"), msg("user")), *OK), {1}),
    "bad weight": (lines(row(msg("user"), {**msg("assistant"), "weight": 7}), *OK), {1}),
    "weight on user": (lines(row({**msg("user"), "weight": 1}, msg("assistant")), *OK), {1}),
    "huge line": (lines(*OK, b'{"messages": [{"role": "user", "content": "'
                        + b"x" * 5000 + b'"}]}'), {13}),
    "deep nesting": (lines(b"[" * 100_000 + b"]" * 100_000, *OK), {1}),
    "nul byte": (lines(*OK[:3], good(3)[:-2] + b"\x00" + good(3)[-2:], *OK[4:]), {4}),
    "escaped nul in content": (lines(*OK, row(msg("user", "a\u0000b"), msg("assistant"))),
                               {13}),
    "invalid utf-8": (lines(*OK[:7], b'{"messages": "\xff\xfe"}', *OK[7:]), {8}),
    "latin-1 text": (lines(*OK, row(msg("user"), msg("assistant")).replace(
        b"hi", "caf\xe9".encode("latin-1"))), {13}),
    "utf-8 bom": (b"\xef\xbb\xbf" + lines(*OK), {1}),
    "utf-16": (lines(*OK).decode().encode("utf-16"), {1}),
    "one valid line among errors": (lines(b"{", good(), b"}", b"[]"), {1, 3, 4}),
    "too few examples": (lines(*OK[:3]), {None}),
    "zip renamed .jsonl": (zipped(), {1}),
    "gzip renamed .jsonl": (b"\x1f\x8b\x08\x00" + b"\x00" * 50, {1}),
    "preference row in a chat file": (lines(*OK, json.dumps({
        "input": {"messages": [msg("user")]}, "preferred_output": [msg("assistant", "a")],
        "non_preferred_output": [msg("assistant", "b")]}).encode()), {13}),
    "unknown format": (lines(*OK, b'{"prompt": "1+1=", "completion": "2"}'), {13}),
    "many errors": (lines(*[b"{"] * 30, *OK), set(range(1, 21))),
}


def test_the_corpus_has_at_least_forty_datasets():
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_a_malformed_dataset_ends_in_error_with_line_numbers(name, alice):
    content, expected_lines = CORPUS[name]
    response = upload(alice.client, content)
    assert response.status_code == 200, response.content
    file = file_validate(file_id=response.json()["id"])
    assert file is not None and file.status == "error", (name, file.validation)
    reported = {error["line"] for error in file.validation["errors"]}
    assert expected_lines <= reported, (name, file.validation["errors"])
    assert all(error["message"] for error in file.validation["errors"])
    assert file.status_details

    shown = alice.client.get(f"/v1/files/{file.id}").json()
    assert shown["status"] == "error" and shown["validation"]["errors"]
    job = alice.client.post("/v1/fine_tuning/jobs", {"model": "posttrain-tiny",
                                                     "training_file": file.id}, format="json")
    assert job.status_code == 400
    assert job.json()["error"]["code"] == "invalid_file"
