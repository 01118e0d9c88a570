"""schemathesis against our OpenAPI schema, authenticated as one organization: 0 failures.

Every operation is fuzzed in process (schemathesis' WSGI transport, on the test database)
with its default checks: no server errors, documented status codes, content types, headers
and response schemas, negative (schema-invalid) data rejected, and authentication not
ignored. The schema is the one the server publishes, which ``test_openapi_schema`` keeps equal
to the committed ``api_docs/openapi.yaml``.

One check is skipped on a few operations, on purpose: ``positive_data_acceptance`` expects
every schema-valid body to be accepted, but these bodies carry rules a JSON schema cannot
state, so a schema-valid body can still be refused with a 400 that names the field:
  * job create and estimate: a model and files that must exist and be ``processed``, and
    ``hyperparameters`` given either at the top level (OpenAI's deprecated form) or inside
    ``method``, never both;
  * the graders run and validate: a grader object whose rules (type, fields per type,
    sandboxed python source) the grader library checks;
  * resume: ``max_cost`` is a decimal string or number of at most 6 places and at least
    $0.000001, which a string schema cannot bound;
  * file upload: a zero-byte ``file`` part placed last, after form fields with control
    characters in their names, is dropped by Django's multipart parser, and the view answers
    400 "Missing multipart field 'file'" (an empty file sent plainly is accepted and fails
    validation, as ``test_malformed_datasets`` expects).
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

MAX_EXAMPLES = 40

SEMANTIC_BODIES = {
    ("POST", "/v1/fine_tuning/jobs"), ("POST", "/v1/fine_tuning/jobs/estimate"),
    ("POST", "/v1/fine_tuning/alpha/graders/run"),
    ("POST", "/v1/fine_tuning/alpha/graders/validate"),
    ("POST", "/v1/fine_tuning/jobs/{job_id}/resume"), ("POST", "/v1/files"),
}


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """As Django's test client does: a request must not close the connection that holds the
    test's transaction."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


# The schema the server publishes, over WSGI; building it touches no database.
schema = schemathesis.openapi.from_wsgi("/openapi.json", get_wsgi_application())

CURRENT_KEY = [""]  # this test's organization key (each test has its own, rolled back)


@schema.auth(refresh_interval=None)
class OrganizationKey:
    """Authenticates every request as one organization, through schemathesis' auth hook so
    that its auth checks know which header to leave out or spoil."""

    def get(self, case: schemathesis.Case, context: object) -> str:
        return CURRENT_KEY[0]

    def set(self, case: schemathesis.Case, data: str, context: object) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_the_api_passes_schemathesis_default_checks(case, alice):
    excluded = ([positive_data_acceptance]
                if (case.method.upper(), case.path) in SEMANTIC_BODIES else [])
    CURRENT_KEY[0] = alice.key
    case.call_and_validate(excluded_checks=excluded)
