"""Inputs schemathesis found that once broke the API, kept as plain regression tests."""

from __future__ import annotations


def test_a_nul_in_a_metadata_filter_matches_nothing(alice):
    response = alice.client.get("/v1/fine_tuning/jobs", {"metadata[a\x00]": "b\x00"})
    assert response.status_code == 200, response.content
    assert response.json()["data"] == []


def test_a_nul_in_a_cursor_is_an_unknown_cursor(alice):
    response = alice.client.get("/v1/files", {"after": "file-\x00"})
    assert response.status_code == 404
    assert response.json()["error"]["param"] == "after"


def test_an_empty_limit_is_refused_like_any_non_integer(alice):
    response = alice.client.get("/v1/files", {"limit": ""})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "limit"


def test_a_nul_in_an_id_is_bad_input_not_a_server_error(alice):
    response = alice.client.get("/v1/files/file-\x00")
    assert response.status_code in {400, 404}  # 400 on PostgreSQL, 404 on SQLite


def test_estimate_takes_json_only(alice):
    response = alice.client.post("/v1/fine_tuning/jobs/estimate", {"model": "posttrain-tiny"})
    assert response.status_code == 415
