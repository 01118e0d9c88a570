"""Console routes, at the site root beside /v1 (the API), /docs and /admin."""

from django.urls import path

from posttrain_server.console.views import account, dashboard, files, jobs, session

app_name = "console"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("login", session.LoginView.as_view(), name="login"),
    path("logout", session.LogoutView.as_view(), name="logout"),
    path("organization", session.organization_switch, name="organization"),
    path("files", files.file_list, name="files"),
    path("files/upload", files.file_upload, name="file_upload"),
    path("files/<str:file_id>", files.file_detail, name="file"),
    path("files/<str:file_id>/content", files.file_content, name="file_content"),
    path("files/<str:file_id>/delete", files.file_delete, name="file_delete"),
    path("jobs", jobs.job_list, name="jobs"),
    path("jobs/new", jobs.job_new, name="job_new"),
    path("jobs/new/estimate", jobs.job_new_estimate, name="job_estimate"),
    path("graders/test", jobs.grader_test, name="grader_test"),
    path("jobs/<str:job_id>", jobs.job_detail, name="job"),
    path("jobs/<str:job_id>/model", jobs.model_content, name="model_content"),
    path("jobs/<str:job_id>/checkpoints/<str:checkpoint_id>", jobs.checkpoint_content,
         name="checkpoint_content"),
    path("jobs/<str:job_id>/cancel", jobs.job_action, {"action": "cancel"}, name="job_cancel"),
    path("jobs/<str:job_id>/pause", jobs.job_action, {"action": "pause"}, name="job_pause"),
    path("jobs/<str:job_id>/resume", jobs.job_action, {"action": "resume"}, name="job_resume"),
    path("keys", account.keys, name="keys"),
    path("keys/<str:key_id>/revoke", account.key_revoke, name="key_revoke"),
    path("billing", account.billing, name="billing"),
    path("billing/invoices/<str:invoice_id>.csv", account.invoice_content, name="invoice_csv"),
    path("pools", account.pools, name="pools"),
]
