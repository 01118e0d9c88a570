"""Jobs: the list, the new-job form with a live estimate and a grader tester, and the job
page, which re-fetches its panel (status, charts, cost, checkpoints, events) while it runs."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from posttrain_server.api.errors import ApiError, NotFoundError
from posttrain_server.console import charts
from posttrain_server.console.access import console_view, org_of
from posttrain_server.console.job_form import FormRefusal, JobForm, job_estimate, job_submit
from posttrain_server.files.downloads import storage_download
from posttrain_server.jobs import estimates, grader_services, pausing, selectors, services
from posttrain_server.jobs.naming import checkpoint_name
from posttrain_server.jobs.render import job_object
from posttrain_server.jobs.serializers import JobResumeSerializer
from posttrain_server.jobs.state_machine import TERMINAL, JobStatus

EVENTS_SHOWN = 60


@console_view
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = selectors.job_list(organization=org_of(request))
    status = request.GET.get("status", "")
    if status in JobStatus.values:
        jobs = jobs.filter(status=status)
    return render(request, "console/jobs/list.html", {
        "jobs": jobs.order_by("-created_at")[:200], "status": status,
        "statuses": JobStatus.values})


def _refuse(form: JobForm, refusal: FormRefusal) -> None:
    form.add_error(refusal.field if refusal.field in form.fields else None, refusal.message)


@console_view
def job_new(request: HttpRequest) -> HttpResponse:
    organization = org_of(request)
    form = JobForm(request.POST or None, organization=organization,
                   initial={"model": request.GET.get("model", "")})
    estimate = None
    if request.method == "POST" and form.is_valid():
        try:
            if request.POST.get("action") == "estimate":
                estimate = job_estimate(organization=organization, form=form)
            else:
                job = job_submit(organization=organization, form=form)
                messages.success(request, f"Created {job.id} on pool {job.pool}")
                return redirect("console:job", job_id=job.id)
        except FormRefusal as refusal:
            _refuse(form, refusal)
    return render(request, "console/jobs/new.html", {"form": form, "estimate": estimate})


@require_POST
@console_view
def job_new_estimate(request: HttpRequest) -> HttpResponse:
    """The estimate table for the form as it stands (the page asks as fields change)."""
    form = JobForm(request.POST, organization=org_of(request))
    estimate, problem = None, None
    if form.is_valid():
        try:
            estimate = job_estimate(organization=org_of(request),
                                    form=form)
        except FormRefusal as refusal:
            problem = refusal.message
    else:
        problem = "; ".join(f"{form[name].label if name in form.fields else ''}: {error}"
                            for name, errors in form.errors.items() for error in errors)
    return render(request, "console/jobs/_estimate.html",
                  {"estimate": estimate, "problem": problem})


@require_POST
@console_view
def grader_test(request: HttpRequest) -> HttpResponse:
    """Run the grader on one sample, through the same service as the graders API."""
    result, problem = None, None
    try:
        grader = json.loads(request.POST.get("grader") or "null")
        item = json.loads(request.POST.get("item") or "{}")
        if not isinstance(item, dict):
            raise ValueError("The item must be a JSON object")
        result = grader_services.grader_run(grader=grader,
                                            model_sample=request.POST.get("sample", ""),
                                            item=item)
    except (ValueError, ApiError) as exc:  # JSONDecodeError is a ValueError
        problem = exc.message if isinstance(exc, ApiError) else str(exc)
    return render(request, "console/jobs/_grader_result.html",
                  {"result": result, "problem": problem})


def _panel_context(job: Any) -> dict[str, Any]:
    body = job_object(job)
    metrics = [event.data for event in selectors.job_events(job=job).filter(
        type="metrics").order_by("created_at") if event.data]
    events = list(selectors.job_events(job=job).order_by("-created_at")[:EVENTS_SHOWN])
    checkpoints = [(checkpoint, checkpoint_name(job, checkpoint.step)) for checkpoint in
                   selectors.job_checkpoints(job=job).order_by("-step")]
    terminal = job.status in TERMINAL
    gpu_hours = job.device_seconds / 3600
    return {
        "job": job, "body": body, "terminal": terminal, "charts": charts.job_charts(metrics),
        "events": events, "checkpoints": checkpoints, "gpu_hours": gpu_hours,
        "alternatives": estimates.job_alternatives(job=job) if terminal else [],
        "can_cancel": not terminal,
        "can_pause": job.status in (JobStatus.QUEUED, JobStatus.RUNNING),
        "can_resume": job.status == JobStatus.PAUSED,
    }


@console_view
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    job = selectors.job_get(organization=org_of(request),
                            job_id=job_id)
    context = _panel_context(job)
    template = ("console/jobs/_panel.html" if request.GET.get("fragment")
                else "console/jobs/detail.html")
    response = render(request, template, context)
    if context["terminal"]:
        response["X-Live-Done"] = "1"
    return response


@require_POST
@console_view
def job_action(request: HttpRequest, job_id: str, action: str) -> HttpResponse:
    """Cancel, pause or resume: the same services as ``POST .../cancel`` and friends."""
    organization = org_of(request)
    try:
        if action == "cancel":
            services.job_cancel(organization=organization, job_id=job_id)
            messages.success(request, "Cancellation requested")
        elif action == "pause":
            pausing.job_pause(organization=organization, job_id=job_id)
            messages.success(request, "Pause requested")
        else:
            data: dict[str, Any] = {}
            if request.POST.get("max_cost"):
                data["max_cost"] = request.POST["max_cost"]
            serializer = JobResumeSerializer(data=data)
            if not serializer.is_valid():
                raise ApiError("max_cost must be a positive amount in USD", param="max_cost")
            pausing.job_resume(organization=organization, job_id=job_id,
                               data=serializer.validated_data)
            messages.success(request, "Resumed")
    except ApiError as exc:
        if exc.status_code == 404:
            raise
        messages.error(request, exc.message)
    return redirect("console:job", job_id=job_id)


@console_view
def checkpoint_content(request: HttpRequest, job_id: str, checkpoint_id: str) -> HttpResponse:
    job = selectors.job_get(organization=org_of(request),
                            job_id=job_id)
    checkpoint = selectors.checkpoint_get(job=job, checkpoint_id=checkpoint_id)
    return storage_download(checkpoint.storage_key, f"{job.id}-step-{checkpoint.step}.tar",
                            "application/x-tar")


@console_view
def model_content(request: HttpRequest, job_id: str) -> HttpResponse:
    job = selectors.job_get(organization=org_of(request),
                            job_id=job_id)
    if not job.adapter_key:
        raise NotFoundError("This job has no model to download")
    return storage_download(job.adapter_key, f"{job.id}-{job.adapter_kind}.tar",
                            "application/x-tar")
