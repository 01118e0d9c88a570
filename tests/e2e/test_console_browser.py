"""The web console in a real browser (Debian's Chromium, driven by Playwright) against the
real stack: sign in, upload a bad and a good dataset, submit an SFT job and watch a real
worker finish it, read its chart and cost, cancel another job, create and revoke an API key.

Screenshots of every page go to ``$POSTTRAIN_TEST_OUTPUT/console/`` (default
``test-output/console``). ``make test`` installs Chromium where it is missing; where it
cannot be installed these tests are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from posttrain_server.tenancy.services import console_user_set, organization_get_or_create

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHROMIUM = os.environ.get("POSTTRAIN_CHROMIUM", "/usr/bin/chromium")
PASSWORD = "console-e2e-password"
SHOTS = Path(os.environ.get("POSTTRAIN_TEST_OUTPUT", "test-output")) / "console"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -r requirements-dev.txt)")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install chromium` could not run "
                    "here (see scripts/ensure-test-packages.sh)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    # Playwright's sync API keeps an asyncio loop on this thread; Django then refuses the
    # test's own (synchronous) database calls unless told the loop is not Django's.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                              args=["--no-sandbox"])
        yield launched
        launched.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def page(browser, api, stack):
    organization = organization_get_or_create(name="e2e-org")
    console_user_set(organization=organization, username="browser-user", password=PASSWORD)
    context = browser.new_context(base_url=stack.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda message: message.type == "error" and errors.append(message.text))
    tab.on("dialog", lambda dialog: dialog.accept())  # the confirm() before destructive acts
    yield tab
    context.close()
    assert not errors, f"browser console errors (a CSP violation shows here): {errors}"


def shot(page, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in(page) -> None:
    page.goto("/")
    assert "/login" in page.url
    shot(page, "01-login")
    page.get_by_label("User name", exact=True).fill("browser-user")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/")
    assert page.get_by_role("heading", name="Dashboard").is_visible()


def upload(page, path: Path) -> str:
    page.goto("/files")
    page.get_by_label("File (.jsonl)", exact=True).set_input_files(str(path))
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url("**/files/file-*")
    return page.url.rsplit("/", 1)[-1]


def new_sft_job(page, train_id: str, validation_id: str) -> str:
    page.goto("/jobs/new")
    page.get_by_label("Method", exact=True).select_option("supervised")
    page.get_by_label("Training file", exact=True).select_option(train_id)
    page.get_by_label("Validation file", exact=True).select_option(validation_id)
    page.get_by_label("Epochs", exact=True).fill("1")
    page.get_by_label("Batch size", exact=True).fill("16")
    page.get_by_label("Pool", exact=True).select_option("cpu")
    # The live estimate compares every pool before anything is submitted.
    try:
        page.locator("#estimate table.estimate th", has_text="rubin").wait_for()
    except Exception as exc:
        raise AssertionError(page.locator("#estimate").inner_html()) from exc
    page.get_by_role("button", name="Create job").click()
    page.wait_for_url("**/jobs/ftjob-*")
    return page.url.rsplit("/", 1)[-1]


def test_a_person_trains_a_model_in_the_browser(page, toy_data, tmp_path, stack):
    sign_in(page)
    shot(page, "02-dashboard-empty")

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "wizard", "content": "hi"}]}\n'
                   '{"messages": "not a list"}\nnot json at all\n')
    upload(page, bad)
    errors = page.get_by_test_id("validation-errors")
    errors.wait_for()  # the page refreshes itself until validation is done
    text = errors.inner_text()
    for line in ("1", "2", "3"):
        assert f"\n{line}\t" in f"\n{text}" or f"\n{line} " in f"\n{text}", text
    shot(page, "03-file-with-errors")

    train_id = upload(page, toy_data["train"])
    page.locator("#report-title .status-processed").wait_for()
    assert "240" in page.locator("#file-report dl").inner_text()
    shot(page, "04-file-valid")
    validation_id = upload(page, toy_data["validation"])

    page.goto("/jobs/new")
    page.get_by_label("Method", exact=True).select_option("reinforcement")
    page.get_by_role("button", name="Test grader").click()
    page.locator("#grader-result .grader-score").wait_for()
    assert "Reward: 1.0" in page.locator("#grader-result").inner_text()
    shot(page, "05-new-job-grader-test")

    job_id = new_sft_job(page, train_id, validation_id)
    shot(page, "06-job-running")
    page.get_by_test_id("job-status").get_by_text("succeeded").wait_for(timeout=300_000)
    page.locator("[data-testid=charts] figure.chart svg polyline").first.wait_for()
    assert page.locator("figure.chart figcaption", has_text="Loss").count() == 1
    cost = page.get_by_test_id("cost").inner_text()
    assert "Tokens" in cost and "GPU-hours" in cost and "Total" in cost
    assert "exact_match" in page.get_by_test_id("eval").inner_text()
    assert page.get_by_role("link", name="tar").count() >= 1  # checkpoint downloads
    assert page.get_by_role("heading", name="On the other pools").is_visible()
    shot(page, "07-job-succeeded")

    # Another job, cancelled from its page.
    other = new_sft_job(page, train_id, validation_id)
    assert other != job_id
    page.get_by_role("button", name="Cancel job").click()
    page.get_by_test_id("job-status").get_by_text("cancelled").wait_for(timeout=120_000)
    shot(page, "08-job-cancelled")

    page.goto("/")
    assert page.get_by_test_id("month-spend").inner_text().startswith("$")
    shot(page, "09-dashboard")

    # An API key: shown once, works, revoked, refused.
    page.goto("/keys")
    page.get_by_label("Name", exact=True).fill("from the browser")
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_test_id("new-key-secret").input_value()
    shot(page, "10-key-created")
    api = httpx.Client(base_url=f"{stack.url}/v1", headers={"Authorization": f"Bearer {secret}"})
    assert api.get("/files").status_code == 200
    page.get_by_role("button", name="Revoke from the browser").click()
    page.get_by_text("requests with it now fail").wait_for()
    assert api.get("/files").status_code == 401
    shot(page, "11-key-revoked")

    for path, name in (("/billing", "12-billing"), ("/pools", "13-pools"),
                       ("/files", "14-files"), ("/jobs", "15-jobs")):
        page.goto(path)
        shot(page, name)
