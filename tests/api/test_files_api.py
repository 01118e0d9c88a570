"""Files API: OpenAI's file object, line-numbered validation, tenancy, limits, idempotency."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from posttrain_server.files.models import File
from posttrain_server.files.services import file_validate
from posttrain_server.tenancy.models import ApiKey, IdempotencyRecord

FILE_FIELDS = {"id", "object", "bytes", "created_at", "expires_at", "filename", "purpose",
               "status", "status_details", "validation"}


def assert_error(response, status: int, *, param=None, code=None) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    return error


def content_of(response) -> bytes:
    try:
        return b"".join(response.streaming_content)
    finally:
        response.close()


# --- upload ---------------------------------------------------------------------------------

def test_an_upload_answers_an_openai_file_object_and_queues_validation(
        alice, jsonl, upload_file, django_capture_on_commit_callbacks):
    content = jsonl(12)
    before = int(time.time())

    with django_capture_on_commit_callbacks() as queued:
        response = upload_file(alice.client, content, filename="my data.jsonl")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == FILE_FIELDS
    assert body["id"].startswith("file-")
    assert body["object"] == "file"
    assert body["bytes"] == len(content)
    assert before - 1 <= body["created_at"] <= int(time.time()) + 1
    assert body["filename"] == "my data.jsonl"
    assert body["purpose"] == "fine-tune"
    assert body["status"] == "uploaded"
    assert body["status_details"] is None
    assert body["expires_at"] is None
    assert len(queued) == 1
    row = File.objects.get(id=body["id"])
    assert row.organization == alice.organization
    assert row.status == "uploaded"


def test_validation_of_a_good_file_makes_it_processed(alice, jsonl, upload_file):
    file_id = upload_file(alice.client, jsonl(12)).json()["id"]

    assert file_validate(file_id=file_id).status == "processed"

    body = alice.client.get(f"/v1/files/{file_id}").json()
    assert body["status"] == "processed"
    assert body["status_details"] is None
    assert body["validation"] == {"format": "chat", "line_count": 12, "example_count": 12,
                                  "error_count": 0, "errors": []}


def test_validation_of_a_bad_file_reports_errors_by_line(alice, jsonl, upload_file):
    lines = jsonl(12).splitlines(keepends=True)
    lines[2] = b"{not json\n"
    lines[8] = b'{"messages": [{"role": "user", "content": "hi"}]}\n'
    file_id = upload_file(alice.client, b"".join(lines)).json()["id"]

    assert file_validate(file_id=file_id).status == "error"

    body = alice.client.get(f"/v1/files/{file_id}").json()
    assert body["status"] == "error"
    assert body["status_details"].startswith("line 3: invalid JSON")
    assert body["status_details"].endswith("(and 1 more errors)")
    assert [error["line"] for error in body["validation"]["errors"]] == [3, 9]
    assert body["validation"]["error_count"] == 2
    assert body["validation"]["example_count"] == 10


def test_validating_twice_is_a_no_op(alice, jsonl, upload_file):
    file_id = upload_file(alice.client, jsonl(12)).json()["id"]
    assert file_validate(file_id=file_id) is not None

    assert file_validate(file_id=file_id) is None
    assert file_validate(file_id="file-unknown") is None
    assert File.objects.get(id=file_id).status == "processed"


@pytest.mark.parametrize(("fields", "param"), [
    ({"purpose": None}, "purpose"),
    ({"purpose": ""}, "purpose"),
    ({"content": None}, "file"),
    ({"purpose": "assistants"}, "purpose"),
    ({"purpose": "fine-tune-results"}, "purpose"),
])
def test_an_upload_without_a_valid_purpose_or_file_is_refused(
        alice, jsonl, upload_file, fields, param):
    kwargs = {"content": jsonl(12), "purpose": "fine-tune", **fields}

    response = upload_file(alice.client, kwargs.pop("content"), **kwargs)

    assert_error(response, 400, param=param)
    assert not File.objects.exists()


def test_an_upload_over_the_cap_is_refused_with_413_and_stores_nothing(
        alice, upload_file, settings, isolated_storage):
    settings.UPLOAD_MAX_BYTES = 100

    response = upload_file(alice.client, b"x" * 101)

    error = assert_error(response, 413, code="file_too_large")
    assert "100 bytes" in error["message"]
    assert not File.objects.exists()
    assert not any(path.is_file() for path in isolated_storage.rglob("*"))


def test_an_upload_of_exactly_the_cap_is_accepted(alice, upload_file, settings):
    settings.UPLOAD_MAX_BYTES = 100

    response = upload_file(alice.client, b"x" * 100)

    assert response.status_code == 200
    assert response.json()["bytes"] == 100


# --- authentication -------------------------------------------------------------------------

@pytest.mark.parametrize("authorization", [
    None,
    "Bearer",
    "Basic dXNlcjpwYXNz",
    "Bearer pt-000000000000_not-a-real-key",
    "Bearer sk-proj-something",
])
def test_a_request_without_a_valid_key_gets_401_invalid_api_key(db, anonymous, authorization):
    if authorization is not None:
        anonymous.credentials(HTTP_AUTHORIZATION=authorization)

    response = anonymous.get("/v1/files")

    assert_error(response, 401, code="invalid_api_key")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_revoked_key_gets_401(alice):
    assert alice.client.get("/v1/files").status_code == 200
    ApiKey.objects.filter(organization=alice.organization).update(revoked_at=timezone.now())

    response = alice.client.get("/v1/files")

    assert_error(response, 401, code="invalid_api_key")


def test_a_key_with_the_right_prefix_but_a_wrong_secret_gets_401(alice, anonymous):
    prefix, _, _secret = alice.key.partition("_")
    anonymous.credentials(HTTP_AUTHORIZATION=f"Bearer {prefix}_wrong-secret")

    assert_error(anonymous.get("/v1/files"), 401, code="invalid_api_key")


def test_uploading_without_a_key_stores_nothing(db, anonymous, jsonl, upload_file):
    response = upload_file(anonymous, jsonl(12))

    assert_error(response, 401, code="invalid_api_key")
    assert not File.objects.exists()


# --- list, retrieve, content, delete --------------------------------------------------------

def test_the_list_pages_newest_first_with_a_cursor(alice, jsonl, upload_file):
    ids = [upload_file(alice.client, jsonl(12), filename=f"{n}.jsonl").json()["id"]
           for n in range(3)]

    first = alice.client.get("/v1/files", {"limit": 2}).json()
    assert first["object"] == "list"
    assert [item["id"] for item in first["data"]] == [ids[2], ids[1]]
    assert first["has_more"] is True
    assert first["first_id"] == ids[2]
    assert first["last_id"] == ids[1]

    second = alice.client.get("/v1/files", {"limit": 2, "after": first["last_id"]}).json()
    assert [item["id"] for item in second["data"]] == [ids[0]]
    assert second["has_more"] is False

    everything = alice.client.get("/v1/files").json()
    assert [item["id"] for item in everything["data"]] == ids[::-1]
    assert everything["has_more"] is False


def test_an_empty_list_has_no_cursor(alice):
    assert alice.client.get("/v1/files").json() == {
        "object": "list", "data": [], "has_more": False, "first_id": None, "last_id": None}


def test_the_list_filters_by_purpose(alice, jsonl, upload_file):
    upload_file(alice.client, jsonl(12))

    assert len(alice.client.get("/v1/files", {"purpose": "fine-tune"}).json()["data"]) == 1
    assert alice.client.get("/v1/files", {"purpose": "fine-tune-results"}).json()["data"] == []


@pytest.mark.parametrize("limit", ["abc", "0", "-1", "101", "1.5"])
def test_an_invalid_limit_is_refused(alice, limit):
    assert_error(alice.client.get("/v1/files", {"limit": limit}), 400, param="limit")


def test_an_unknown_cursor_is_refused(alice):
    assert_error(alice.client.get("/v1/files", {"after": "file-nope"}), 404, param="after")


def test_retrieve_returns_the_same_object_as_the_upload(alice, jsonl, upload_file):
    uploaded = upload_file(alice.client, jsonl(12)).json()

    response = alice.client.get(f"/v1/files/{uploaded['id']}")

    assert response.status_code == 200
    assert response.json() == uploaded


def test_content_returns_the_exact_bytes(alice, upload_file):
    content = ('{"messages": [{"role": "user", "content": "héllo ✓"}]}\r\n'.encode()
               + bytes(range(256)))
    file_id = upload_file(alice.client, content, filename="raw.jsonl").json()["id"]

    response = alice.client.get(f"/v1/files/{file_id}/content")

    assert response.status_code == 200
    assert 'filename="raw.jsonl"' in response["Content-Disposition"]
    assert content_of(response) == content


def test_delete_answers_deleted_then_the_file_is_gone(alice, jsonl, upload_file,
                                                      isolated_storage):
    file_id = upload_file(alice.client, jsonl(12)).json()["id"]

    response = alice.client.delete(f"/v1/files/{file_id}")

    assert response.status_code == 200
    assert response.json() == {"id": file_id, "object": "file", "deleted": True}
    assert_error(alice.client.get(f"/v1/files/{file_id}"), 404, param="file_id")
    assert_error(alice.client.get(f"/v1/files/{file_id}/content"), 404, param="file_id")
    assert_error(alice.client.delete(f"/v1/files/{file_id}"), 404, param="file_id")
    assert alice.client.get("/v1/files").json()["data"] == []
    assert not any(path.is_file() for path in isolated_storage.rglob("*"))


def test_an_unknown_file_is_404(alice):
    assert_error(alice.client.get("/v1/files/file-nope"), 404, param="file_id")


# --- tenancy --------------------------------------------------------------------------------

def test_another_organization_cannot_see_read_or_delete_a_file(alice, bob, jsonl, upload_file):
    file_id = upload_file(alice.client, jsonl(12)).json()["id"]
    upload_file(bob.client, jsonl(12), filename="bobs.jsonl")

    for response in (bob.client.get(f"/v1/files/{file_id}"),
                     bob.client.get(f"/v1/files/{file_id}/content"),
                     bob.client.delete(f"/v1/files/{file_id}")):
        error = assert_error(response, 404, param="file_id")
        assert "alice" not in error["message"]

    bobs_list = bob.client.get("/v1/files").json()["data"]
    assert [item["filename"] for item in bobs_list] == ["bobs.jsonl"]
    assert file_id not in {item["id"] for item in bobs_list}
    assert alice.client.get(f"/v1/files/{file_id}").status_code == 200
    assert File.objects.get(id=file_id).deleted_at is None


def test_another_organizations_id_is_not_a_valid_cursor(alice, bob, jsonl, upload_file):
    alices = upload_file(alice.client, jsonl(12)).json()["id"]
    upload_file(bob.client, jsonl(12))

    assert_error(bob.client.get("/v1/files", {"after": alices}), 404, param="after")


# --- idempotency ----------------------------------------------------------------------------

def test_an_idempotent_upload_replays_the_same_file(alice, jsonl, upload_file):
    headers = {"Idempotency-Key": "upload-1"}

    first = upload_file(alice.client, jsonl(12), headers=headers)
    second = upload_file(alice.client, jsonl(12), headers=headers)

    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert File.objects.count() == 1
    assert IdempotencyRecord.objects.count() == 1


def test_reusing_an_idempotency_key_for_another_body_is_a_409_not_to_retry(
        alice, jsonl, upload_file):
    headers = {"Idempotency-Key": "upload-2"}
    upload_file(alice.client, jsonl(12), filename="a.jsonl", headers=headers)

    response = upload_file(alice.client, jsonl(12), filename="b.jsonl", headers=headers)

    assert_error(response, 409, param="Idempotency-Key", code="idempotency_key_reused")
    assert response["x-should-retry"] == "false"
    assert File.objects.count() == 1


def test_a_refused_request_does_not_burn_its_idempotency_key(alice, jsonl, upload_file):
    headers = {"Idempotency-Key": "upload-3"}
    assert_error(upload_file(alice.client, jsonl(12), purpose="nope", headers=headers), 400,
                 param="purpose")

    response = upload_file(alice.client, jsonl(12), headers=headers)

    assert response.status_code == 200
    assert File.objects.count() == 1


def test_idempotency_keys_belong_to_one_organization(alice, bob, jsonl, upload_file):
    headers = {"Idempotency-Key": "shared-key"}

    alices = upload_file(alice.client, jsonl(12), headers=headers).json()
    bobs = upload_file(bob.client, jsonl(12), headers=headers).json()

    assert alices["id"] != bobs["id"]
    assert File.objects.get(id=bobs["id"]).organization == bob.organization


def test_an_overlong_idempotency_key_is_refused(alice, jsonl, upload_file):
    response = upload_file(alice.client, jsonl(12), headers={"Idempotency-Key": "k" * 256})

    assert_error(response, 400, param="Idempotency-Key")
    assert not File.objects.exists()
