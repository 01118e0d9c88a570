"""The console through Django's test client: sign-in, every page, forms, and what it refuses.

Browser behaviour (scripts, live updates, a real worker) is in ``test_console_browser.py``.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from posttrain_server.console.security import POLICY
from posttrain_server.files.models import File
from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.tenancy.models import ApiKey
from posttrain_server.tenancy.services import api_key_authenticate

from .conftest import PASSWORD, chat_jsonl, console_upload

PAGES = ["/", "/jobs", "/jobs/new", "/files", "/keys", "/billing", "/pools"]


def sft_form(file_id: str, **overrides) -> dict:
    return {"method": "supervised", "model": "posttrain-tiny", "training_file": file_id,
            "validation_file": "", "n_epochs": "2", "batch_size": "auto",
            "learning_rate_multiplier": "auto", "beta": "auto", "sft_weight": "auto",
            "grader": "", "generations_per_prompt": "auto", "max_completion_length": "auto",
            "temperature": "auto", "kl_beta": "auto", "training_type": "lora", "pool": "cpu",
            "suffix": "", "seed": "7", "max_cost": "", **overrides}


@pytest.mark.parametrize("path", PAGES)
def test_pages_need_a_signed_in_person(db, path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login")


def test_a_wrong_password_is_refused_with_a_message(carol):
    response = Client().post("/login", {"username": "carol", "password": "nope"})
    assert response.status_code == 200
    assert b"password didn't match" in response.content


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_with_a_strict_content_security_policy(carol, path):
    response = carol.client.get(path)
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == POLICY
    assert "'unsafe-inline'" not in POLICY
    html = response.content.decode()
    assert "<script>" not in html and " style=" not in html  # nothing inline for CSP to block
    assert "carol-org" in html


def test_the_login_page_has_the_policy_too(db):
    assert Client().get("/login")["Content-Security-Policy"] == POLICY


def test_every_form_field_has_a_label(carol, validated_file):
    validated_file(carol)
    html = carol.client.get("/jobs/new").content.decode()
    import re

    ids = set(re.findall(r'<(?:input|select|textarea)[^>]*\sid="([^"]+)"', html))
    labelled = set(re.findall(r'<label for="([^"]+)"', html))
    assert ids and ids <= labelled, ids - labelled


def test_forms_without_the_csrf_token_are_refused(carol):
    client = Client(enforce_csrf_checks=True)
    client.force_login(carol.client.session and __import__(
        "django.contrib.auth", fromlist=["get_user_model"]).get_user_model().objects.get(
        username="carol"))
    assert client.post("/keys", {"name": "x"}).status_code == 403
    assert not ApiKey.objects.filter(organization=carol.organization).exists()


def test_a_bad_upload_shows_line_numbered_errors(carol, validated_file):
    bad = b'{"messages": [{"role": "user", "content": "hi"}]}\nnot json\n' + chat_jsonl(11)
    file_id = validated_file(carol, bad)
    html = carol.client.get(f"/files/{file_id}").content.decode()
    assert File.objects.get(id=file_id).status == "error"
    assert 'data-testid="validation-errors"' in html
    report = File.objects.get(id=file_id).validation
    for error in report["errors"]:
        assert f'<td class="num">{error["line"]}</td>' in html
    assert {e["line"] for e in report["errors"]} >= {1, 2}


def test_a_plain_form_upload_redirects_to_the_report(carol):
    response = console_upload(carol, chat_jsonl())
    assert response.status_code == 302
    file = File.objects.get(organization=carol.organization)
    assert response["Location"] == f"/files/{file.id}"
    page = carol.client.get(response["Location"])
    assert b"data-live-url" in page.content  # validating: the page keeps itself fresh


def test_an_upload_over_the_cap_gets_a_clear_error_not_a_server_error(carol, settings):
    settings.UPLOAD_MAX_BYTES = 100
    response = console_upload(carol, chat_jsonl(50), HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert response.status_code == 400
    assert "upload limit" in response.json()["error"]
    assert not File.objects.exists()


def test_deleting_a_file(carol, validated_file):
    file_id = validated_file(carol)
    response = carol.client.post(f"/files/{file_id}/delete")
    assert response.status_code == 302
    assert File.objects.get(id=file_id).deleted_at is not None


def test_creating_a_job_from_the_form(carol, validated_file):
    file_id = validated_file(carol)
    response = carol.client.post("/jobs/new", sft_form(file_id, action="create"))
    job = FineTuningJob.objects.get(organization=carol.organization)
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.id}"
    assert job.method["supervised"]["hyperparameters"]["n_epochs"] == 2
    assert job.seed == 7 and job.pool == "cpu"
    page = carol.client.get(f"/jobs/{job.id}").content.decode()
    assert job.id in page and 'data-live-url' in page


def test_the_form_shows_the_apis_refusal_on_the_field_and_creates_nothing(carol,
                                                                         validated_file):
    file_id = validated_file(carol)
    response = carol.client.post("/jobs/new", sft_form(file_id, n_epochs="500",
                                                       action="create"))
    assert response.status_code == 200
    form = response.context["form"]
    assert "at most 50" in str(form.errors["n_epochs"])
    assert not FineTuningJob.objects.exists()


def test_an_invalid_grader_is_refused_on_the_grader_field(carol, validated_file):
    file_id = validated_file(carol)
    grader = json.dumps({"type": "string_check", "input": "{{sample.output_text}}",
                         "reference": "x", "operation": "nonsense"})
    response = carol.client.post("/jobs/new", sft_form(
        file_id, method="reinforcement", grader=grader, action="create"))
    assert response.status_code == 200
    assert "grader" in response.context["form"].errors
    assert not FineTuningJob.objects.exists()


def test_the_estimate_compares_the_pools(carol, validated_file):
    file_id = validated_file(carol)
    response = carol.client.post("/jobs/new/estimate", sft_form(file_id))
    html = response.content.decode()
    assert response.status_code == 200
    for pool in ("cpu", "blackwell", "rubin"):
        assert f'<th scope="row">{pool}</th>' in html
    assert "trained tokens" in html


def test_the_grader_tester_scores_one_sample(carol):
    grader = json.dumps({"type": "string_check", "name": "g", "operation": "eq",
                         "input": "{{sample.output_text}}",
                         "reference": "{{item.reference_answer}}"})
    right = carol.client.post("/graders/test", {"grader": grader, "sample": "42",
                                                "item": '{"reference_answer": "42"}'})
    wrong = carol.client.post("/graders/test", {"grader": grader, "sample": "41",
                                                "item": '{"reference_answer": "42"}'})
    broken = carol.client.post("/graders/test", {"grader": "{", "sample": "", "item": "{}"})
    assert b"<strong>1.0</strong>" in right.content
    assert b"<strong>0.0</strong>" in wrong.content
    assert b'class="error"' in broken.content


def test_cancel_from_the_job_page(carol, validated_file):
    file_id = validated_file(carol)
    carol.client.post("/jobs/new", sft_form(file_id, action="create"))
    job = FineTuningJob.objects.get(organization=carol.organization)
    response = carol.client.post(f"/jobs/{job.id}/cancel")
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == "cancelled"
    again = carol.client.post(f"/jobs/{job.id}/cancel", follow=True)
    assert b"cannot be cancelled" in again.content  # a clear message, not an error page


def test_an_api_key_is_shown_once_and_revoking_it_stops_it(carol):
    response = carol.client.post("/keys", {"name": "ci"})
    secret = response.context["issued"].secret
    assert secret.encode() in response.content
    assert response["Cache-Control"] == "no-store"
    key = ApiKey.objects.get(organization=carol.organization, name="ci")
    assert secret not in key.hashed_secret and api_key_authenticate(secret) is not None
    assert secret.encode() not in carol.client.get("/keys").content  # never again
    carol.client.post(f"/keys/{key.id}/revoke")
    assert api_key_authenticate(secret) is None
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.get("/v1/files").status_code == 401


def test_people_see_only_their_organizations_jobs(carol, dave, validated_file):
    file_id = validated_file(carol)
    carol.client.post("/jobs/new", sft_form(file_id, action="create"))
    job = FineTuningJob.objects.get(organization=carol.organization)
    for path in ("/", "/jobs", "/files", "/billing"):
        assert job.id.encode() not in dave.client.get(path).content
        assert file_id.encode() not in dave.client.get(path).content


def test_signing_out(carol):
    carol.client.post("/logout")
    assert carol.client.get("/").status_code == 302


def test_the_demo_password_command_makes_a_working_sign_in(db):
    from django.core.management import call_command

    call_command("create_console_user", "--org", "cli-org", "--username", "erin",
                 "--password", PASSWORD)
    assert Client().post("/login", {"username": "erin", "password": PASSWORD}
                         ).status_code == 302


def test_a_finished_job_page_shows_charts_eval_cost_and_other_pools(carol, validated_file):
    from decimal import Decimal

    from django.utils import timezone

    from posttrain_server.jobs.models import Checkpoint, JobEvent

    file_id = validated_file(carol)
    carol.client.post("/jobs/new", sft_form(file_id, action="create"))
    job = FineTuningJob.objects.get(organization=carol.organization)
    for step in (1, 2, 3):
        JobEvent.objects.create(job=job, attempt=1, seq=step, type="metrics", message="m",
                                data={"step": step, "train_loss": 3.0 / step,
                                      "learning_rate": 1e-3, "train_mean_token_accuracy":
                                      0.2 * step})
    Checkpoint.objects.create(job=job, attempt=1, step=3, storage_key="k",
                              metrics={"train_loss": 1.0})
    FineTuningJob.objects.filter(id=job.id).update(
        status="succeeded", finished_at=timezone.now(), trained_tokens=1000,
        cost_tokens=Decimal("0.010000"), cost_compute=Decimal("0.002000"),
        device_seconds=Decimal("36.000"), price_version="2026-11-01",
        eval={"metric": "exact_match", "before": 0.1, "after": 0.6, "gain": 0.5,
              "gain_per_dollar": 41.67})
    response = carol.client.get(f"/jobs/{job.id}")
    html = response.content.decode()
    assert response["X-Live-Done"] == "1" and "data-live-url" not in html
    for caption in ("Loss", "Accuracy", "Learning rate"):
        assert f"<figcaption>{caption}</figcaption>" in html
    assert "$0.012" in html and "0.010000" in html and "0.010000 GPU-h" in html
    assert "On the other pools" in html and ">rubin<" in html
    assert "ckpt-step-3" in html
    dashboard = carol.client.get("/").content.decode()
    assert "41.67" in dashboard and job.id in dashboard


def test_an_unknown_page_is_the_consoles_404(carol):
    response = carol.client.get("/no-such-page")
    assert response.status_code == 404
    assert b"belongs to another organization" in response.content
    assert response["Content-Security-Policy"] == POLICY
