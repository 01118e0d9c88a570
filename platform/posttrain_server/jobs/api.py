"""Fine-tuning jobs API, OpenAI's shape, plus models and downloads."""

from __future__ import annotations

import re

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.errors import NotFoundError
from posttrain_server.api.idempotency import idempotent
from posttrain_server.api.pagination import paginate
from posttrain_server.api.schema import errors, list_of, page_parameters
from posttrain_server.files.downloads import storage_download
from posttrain_server.jobs import estimates, pausing, selectors, services
from posttrain_server.jobs.base_models import BUILTIN_MODELS
from posttrain_server.jobs.render import checkpoint_object, event_object, job_object
from posttrain_server.jobs.serializers import JobCreateSerializer, JobResumeSerializer
from posttrain_server.jobs.state_machine import TERMINAL
from posttrain_server.tenancy.auth import organization_of

_J = serializers.JSONField(allow_null=True)
JobSerializer = inline_serializer(name="FineTuningJob", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "created_at": serializers.IntegerField(),
    "finished_at": serializers.IntegerField(allow_null=True),
    "estimated_finish": serializers.IntegerField(allow_null=True),
    "status": serializers.ChoiceField(choices=["validating_files", "queued", "running",
                                               "pausing", "paused", "succeeded", "failed",
                                               "cancelled"]),
    "model": serializers.CharField(), "fine_tuned_model": serializers.CharField(allow_null=True),
    "organization_id": serializers.CharField(), "training_file": serializers.CharField(),
    "validation_file": serializers.CharField(allow_null=True),
    "result_files": serializers.ListField(child=serializers.CharField()),
    "trained_tokens": serializers.IntegerField(allow_null=True),
    "hyperparameters": _J, "method": _J, "error": _J, "seed": serializers.IntegerField(),
    "suffix": serializers.CharField(allow_null=True), "metadata": _J,
    "integrations": serializers.ListField(child=serializers.JSONField()),
    "pool": serializers.CharField(help_text="Posttrain extension"),
    "training_type": serializers.CharField(help_text="Posttrain extension: lora or full"),
    "parent_job": serializers.CharField(allow_null=True, help_text="Posttrain extension: the "
                                        "job whose result this job started from (a chain)"),
    "lora": serializers.JSONField(allow_null=True, help_text="Posttrain extension"),
    "learning_rate": serializers.FloatField(help_text="Posttrain extension: resolved rate"),
    "max_seq_length": serializers.IntegerField(help_text="Posttrain extension"),
    "cancel_requested": serializers.BooleanField(help_text="Posttrain extension"),
    "progress": serializers.JSONField(allow_null=True,
                                      help_text="Posttrain extension: last metrics"),
    "usage": serializers.JSONField(help_text="Posttrain extension: trained_tokens, "
                                   "device_seconds, rollout_tokens, eval_tokens, devices"),
    "cost": serializers.JSONField(help_text="Posttrain extension: tokens, compute, total "
                                  "(USD, decimal strings), price_version, tokens_by_kind "
                                  "(the tokens line by usage kind)"),
    "eval": serializers.JSONField(allow_null=True, help_text="Posttrain extension: metric, "
                                  "before, after, gain, gain_per_dollar"),
    "quoted_cost": serializers.CharField(help_text="Posttrain extension: the estimate at "
                                         "create on the job's pool (USD)"),
    "max_cost": serializers.CharField(allow_null=True, help_text="Posttrain extension: the "
                                      "cost cap (USD) at which the job pauses"),
    "alternatives": serializers.ListField(
        child=serializers.JSONField(), required=False,
        help_text="Posttrain extension, finished jobs (retrieve only): what the job's tokens "
        "would have cost on each other enabled pool"),
})
EstimateSerializer = inline_serializer(name="FineTuningJobEstimate", fields={
    "object": serializers.CharField(), "model": serializers.CharField(),
    "method": serializers.CharField(), "size_class": serializers.CharField(),
    "seed": serializers.IntegerField(help_text="Pass it to create: the held-out slice, and "
                                     "so the trained tokens, depend on it"),
    "n_epochs": serializers.IntegerField(),
    "trained_tokens": serializers.IntegerField(
        help_text="Exact, with the model's tokenizer; reinforcement: at most this many, the "
        "tokens the policy generates (every sample at max_completion_length)"),
    "rollout_tokens": serializers.IntegerField(
        help_text="Reinforcement: at most this many rollout tokens (each sample's prompt plus "
        "what it generates); priced at this bound; 0 for other methods"),
    "rollout_tokens_read": serializers.IntegerField(
        help_text="Reinforcement, exact: the rollouts' prompt tokens (kept prompts x epochs x "
        "samples per prompt); the bill's rollout tokens lie between this and rollout_tokens"),
    "eval_tokens": serializers.IntegerField(
        help_text="At most this many eval tokens (before, each checkpoint, after): what the "
        "evals read plus every greedy answer at its full budget; priced and timed"),
    "eval_tokens_read": serializers.IntegerField(
        help_text="Exact: the eval tokens known before the run (prompts, scored sequences); "
        "the bill's eval tokens lie between this and eval_tokens"),
    "eval_segments": serializers.ListField(
        child=serializers.CharField(), help_text="The evals a full run does: before, "
        "step-<N> per checkpoint (first 64 held-out rows), after"),
    "price_version": serializers.CharField(),
    "pool": serializers.CharField(allow_null=True, help_text="The pool create would use"),
    "monthly_budget": serializers.CharField(allow_null=True),
    "month_spend": serializers.CharField(allow_null=True),
    "pools": serializers.ListField(child=serializers.JSONField(), help_text="Per enabled pool: "
                                   "gpus, trained_tokens, eval_tokens, eval_tokens_read, "
                                   "rollout_tokens, rollout_tokens_read, "
                                   "wall_seconds, gpu_hours, cost (tokens, compute, total, "
                                   "tokens_by_kind), workers_online, within_budget"),
})
EventSerializer = inline_serializer(name="FineTuningJobEvent", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "created_at": serializers.IntegerField(), "level": serializers.CharField(),
    "message": serializers.CharField(), "type": serializers.CharField(), "data": _J,
})
CheckpointSerializer = inline_serializer(name="FineTuningJobCheckpoint", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "created_at": serializers.IntegerField(), "fine_tuning_job_id": serializers.CharField(),
    "fine_tuned_model_checkpoint": serializers.CharField(),
    "step_number": serializers.IntegerField(), "metrics": _J,
    "trained_tokens": serializers.IntegerField(),
})
ModelSerializer = inline_serializer(name="Model", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "created": serializers.IntegerField(), "owned_by": serializers.CharField(),
})
PAGE = page_parameters()
_METADATA_PARAM = re.compile(r"^metadata\[(.+)\]$")


class JobListView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_jobs_list",
                   parameters=[*PAGE, OpenApiParameter(
                       "metadata", OpenApiTypes.OBJECT, style="deepObject",
                       description="Filter: metadata[key]=value")],
                   responses={200: list_of("FineTuningJobList", JobSerializer),
                              **errors(400, 404)})
    def get(self, request: Request) -> Response:
        metadata = {m.group(1): value for key, value in request.query_params.items()
                    if (m := _METADATA_PARAM.match(key))}
        jobs = selectors.job_list(organization=organization_of(request), metadata=metadata)
        if any("\x00" in text for pair in metadata.items() for text in pair):
            jobs = jobs.none()  # stored metadata never holds NUL (PostgreSQL cannot compare it)
        return Response(paginate(request, jobs, job_object))

    @extend_schema(operation_id="fine_tuning_jobs_create", request=JobCreateSerializer,
                   responses={200: JobSerializer, **errors(400, 404, 409)})
    @idempotent
    def post(self, request: Request) -> Response:
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = services.job_create(organization=organization_of(request),
                                  data=serializer.validated_data)
        return Response(job_object(job))


class JobEstimateView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_jobs_estimate", request=JobCreateSerializer,
                   description="Posttrain extension: the same body as create; nothing is "
                   "written. Tokens, GPUs, GPU-hours, wall time and dollars on every enabled "
                   "pool, and whether the monthly budget allows it.",
                   responses={200: EstimateSerializer, **errors(400, 404)})
    def post(self, request: Request) -> Response:
        serializer = JobCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(estimates.job_estimate(organization=organization_of(request),
                                               data=serializer.validated_data))


class JobDetailView(APIView):
    @extend_schema(operation_id="fine_tuning_jobs_retrieve",
                   responses={200: JobSerializer, **errors(404)})
    def get(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get(organization=organization_of(request), job_id=job_id)
        body = job_object(job)
        if job.status in TERMINAL:
            body["alternatives"] = estimates.job_alternatives(job=job)
        return Response(body)


class JobCancelView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_jobs_cancel", request=None,
                   responses={200: JobSerializer, **errors(404, 409)})
    @idempotent
    def post(self, request: Request, job_id: str) -> Response:
        job = services.job_cancel(organization=organization_of(request), job_id=job_id)
        return Response(job_object(job))


class JobPauseView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_jobs_pause", request=None,
                   responses={200: JobSerializer, **errors(404, 409)})
    @idempotent
    def post(self, request: Request, job_id: str) -> Response:
        job = pausing.job_pause(organization=organization_of(request), job_id=job_id)
        return Response(job_object(job))


class JobResumeView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_jobs_resume", request=JobResumeSerializer,
                   responses={200: JobSerializer, **errors(400, 404, 409)})
    @idempotent
    def post(self, request: Request, job_id: str) -> Response:
        serializer = JobResumeSerializer(data=request.data or {})
        serializer.is_valid(raise_exception=True)
        job = pausing.job_resume(organization=organization_of(request), job_id=job_id,
                                 data=serializer.validated_data)
        return Response(job_object(job))


class JobEventsView(APIView):
    @extend_schema(operation_id="fine_tuning_jobs_events", parameters=[
        *PAGE, OpenApiParameter("order", str, enum=["desc", "asc"],
                                description="Posttrain extension: asc to follow a job")],
        responses={200: list_of("FineTuningJobEventList", EventSerializer), **errors(404)})
    def get(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get(organization=organization_of(request), job_id=job_id)
        newest_first = request.query_params.get("order", "desc") != "asc"
        return Response(paginate(request, selectors.job_events(job=job), event_object,
                                 newest_first=newest_first))


class JobCheckpointsView(APIView):
    @extend_schema(operation_id="fine_tuning_jobs_checkpoints", parameters=PAGE,
                   responses={200: list_of("FineTuningJobCheckpointList", CheckpointSerializer),
                              **errors(404)})
    def get(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get(organization=organization_of(request), job_id=job_id)
        return Response(paginate(request, selectors.job_checkpoints(job=job).select_related(
            "job__organization"), checkpoint_object, default_limit=10))


class CheckpointContentView(APIView):
    @extend_schema(operation_id="fine_tuning_checkpoints_content",
                   responses={(200, "application/x-tar"): bytes, **errors(404)})
    def get(self, request: Request, job_id: str, checkpoint_id: str) -> HttpResponse:
        job = selectors.job_get(organization=organization_of(request), job_id=job_id)
        checkpoint = selectors.checkpoint_get(job=job, checkpoint_id=checkpoint_id)
        return storage_download(checkpoint.storage_key,
                                f"{job.id}-step-{checkpoint.step}.tar", "application/x-tar")


def _model_object(model_id: str, created: int, owned_by: str) -> dict:
    return {"id": model_id, "object": "model", "created": created, "owned_by": owned_by}


class ModelListView(APIView):
    @extend_schema(operation_id="models_list",
                   responses={200: inline_serializer(name="ModelList", fields={
                       "object": serializers.CharField(),
                       "data": serializers.ListField(child=ModelSerializer)}),
                       **errors()})
    def get(self, request: Request) -> Response:
        organization = organization_of(request)
        data = [_model_object(name, 0, "posttrain") for name in BUILTIN_MODELS]
        data += [_model_object(job.fine_tuned_model, int(job.finished_at.timestamp()),
                               organization.id)
                 for job in selectors.fine_tuned_models(organization=organization)
                 .order_by("-finished_at")]
        return Response({"object": "list", "data": data})


def _fine_tuned_job(request: Request, model: str):
    job = selectors.fine_tuned_models(organization=organization_of(request)).filter(
        fine_tuned_model=model).first()
    if job is None:
        raise NotFoundError(f"The model {model!r} does not exist", param="model",
                            code="model_not_found")
    return job


class ModelDetailView(APIView):
    @extend_schema(operation_id="models_retrieve", responses={200: ModelSerializer,
                                                               **errors(404)})
    def get(self, request: Request, model: str) -> Response:
        if model in BUILTIN_MODELS:
            return Response(_model_object(model, 0, "posttrain"))
        job = _fine_tuned_job(request, model)
        return Response(_model_object(model, int(job.finished_at.timestamp()),
                                      job.organization_id))


class ModelContentView(APIView):
    @extend_schema(operation_id="models_content",
                   description="Posttrain extension: download a fine-tuned model's weights "
                   "(a LoRA adapter or full model, as a tar archive).",
                   responses={(200, "application/x-tar"): bytes, **errors(404)})
    def get(self, request: Request, model: str) -> HttpResponse:
        job = _fine_tuned_job(request, model)
        return storage_download(job.adapter_key, f"{job.id}-{job.adapter_kind}.tar",
                                "application/x-tar")
