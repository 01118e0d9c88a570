"""Routes: the OpenAI-compatible API under /v1, worker endpoints under /internal, docs, and
the web console at the root."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularJSONAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from posttrain_server import health, metrics
from posttrain_server.billing import api as billing_api
from posttrain_server.files import api as files_api
from posttrain_server.jobs import api as jobs_api
from posttrain_server.jobs import graders_api, internal_api
from posttrain_server.pools import api as pools_api

urlpatterns = [
    path("v1/files", files_api.FileListView.as_view()),
    path("v1/files/<str:file_id>", files_api.FileDetailView.as_view()),
    path("v1/files/<str:file_id>/content", files_api.FileContentView.as_view()),
    path("v1/fine_tuning/jobs", jobs_api.JobListView.as_view()),
    path("v1/fine_tuning/jobs/estimate", jobs_api.JobEstimateView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>", jobs_api.JobDetailView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>/cancel", jobs_api.JobCancelView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>/pause", jobs_api.JobPauseView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>/resume", jobs_api.JobResumeView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>/events", jobs_api.JobEventsView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>/checkpoints", jobs_api.JobCheckpointsView.as_view()),
    path("v1/fine_tuning/jobs/<str:job_id>/checkpoints/<str:checkpoint_id>/content",
         jobs_api.CheckpointContentView.as_view()),
    path("v1/fine_tuning/alpha/graders/run", graders_api.GraderRunView.as_view()),
    path("v1/fine_tuning/alpha/graders/validate", graders_api.GraderValidateView.as_view()),
    path("v1/models", jobs_api.ModelListView.as_view()),
    path("v1/pools", pools_api.PoolListView.as_view()),
    path("v1/organization/usage", billing_api.UsageView.as_view()),
    path("v1/organization/invoices", billing_api.InvoiceListView.as_view()),
    path("v1/organization/invoices/<str:invoice_id>", billing_api.InvoiceDetailView.as_view()),
    path("v1/organization/invoices/<str:invoice_id>/content",
         billing_api.InvoiceCsvView.as_view()),
    path("v1/models/<path:model>/content", jobs_api.ModelContentView.as_view()),
    path("v1/models/<path:model>", jobs_api.ModelDetailView.as_view()),
    path("internal/attempts/<str:attempt_id>/claim", internal_api.AttemptClaimView.as_view()),
    path("internal/attempts/<str:attempt_id>/heartbeat",
         internal_api.AttemptHeartbeatView.as_view()),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("redoc", SpectacularRedocView.as_view(url_name="schema")),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", metrics.metrics_view),
    path("admin/", admin.site.urls),
    path("", include("posttrain_server.console.urls")),
]
