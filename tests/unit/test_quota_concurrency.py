"""200 parallel creates against a concurrent-job limit of 5 admit exactly 5 (PostgreSQL).

Each create runs in its own thread with its own database connection, exactly as parallel
requests do in the web server; the limit holds because ``quota_check`` locks the
organization's quota row inside the transaction that writes the job.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections

from posttrain_server.api.errors import ApiError
from posttrain_server.billing.models import OrganizationQuota
from posttrain_server.billing.token_counts import row_lengths
from posttrain_server.jobs import services
from posttrain_server.jobs.models import FineTuningJob
from posttrain_server.pools.services import pools_seed_defaults
from posttrain_server.tenancy.services import organization_get_or_create
from tests.unit.conftest import processed_file
from workers.contract import ModelRef

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL (set DATABASE_URL=postgres://...): SQLite serializes every "
           "write transaction, so it cannot show a race")


def test_two_hundred_parallel_creates_against_a_limit_of_five_admit_exactly_five(
        transactional_db):
    pools_seed_defaults()
    organization = organization_get_or_create(name="quota-org")
    OrganizationQuota.objects.create(organization=organization, max_concurrent_jobs=5)
    file = processed_file(organization)
    row_lengths(file=file, ref=ModelRef(kind="builtin", ref="posttrain-tiny"))  # warm cache

    def create(_: int) -> str:
        try:
            services.job_create(organization=organization, data={
                "model": "posttrain-tiny", "training_file": file.id, "eval_samples": 0})
            return "created"
        except ApiError as error:
            return error.code or "error"
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=20) as pool:
        outcomes = list(pool.map(create, range(200)))

    assert outcomes.count("created") == 5
    assert outcomes.count("concurrent_job_limit") == 195
    assert FineTuningJob.objects.filter(organization=organization).count() == 5
