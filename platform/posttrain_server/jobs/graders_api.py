"""``POST /v1/fine_tuning/alpha/graders/run`` and ``.../validate``, OpenAI's shape."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.schema import errors
from posttrain_server.jobs.grader_services import grader_check, grader_run
from posttrain_server.jobs.serializers import GraderField, StrictSerializer
from posttrain_server.tenancy.auth import organization_of


class GraderRunRequest(StrictSerializer):
    grader = GraderField()
    model_sample = serializers.CharField(allow_blank=True, max_length=1_000_000,
                                         trim_whitespace=False)
    item = serializers.JSONField(required=False, allow_null=True)
    reference_answer = serializers.JSONField(required=False, allow_null=True,
                                             help_text="Deprecated by OpenAI; use item.")

    def validate_item(self, value):  # noqa: ANN001, ANN201
        if value is not None and not isinstance(value, dict):
            raise serializers.ValidationError("Must be an object.")
        return value


class GraderValidateRequest(StrictSerializer):
    grader = GraderField()


_J = serializers.JSONField(allow_null=True)
GraderRunResponse = inline_serializer(name="GraderRunResponse", fields={
    "reward": serializers.FloatField(), "metadata": _J, "sub_rewards": _J,
    "model_grader_token_usage_per_model": _J,
    "error": serializers.CharField(allow_null=True, help_text="Posttrain extension"),
})
GraderValidateResponse = inline_serializer(name="GraderValidateResponse",
                                           fields={"grader": _J})


class GraderRunView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_alpha_graders_run", request=GraderRunRequest,
                   responses={200: GraderRunResponse, **errors(400)})
    def post(self, request: Request) -> Response:
        organization_of(request)  # authenticated callers only
        body = GraderRunRequest(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        item = data.get("item") or {}
        if data.get("reference_answer") is not None:
            item = {"reference_answer": data["reference_answer"], **item}
        return Response(grader_run(grader=data["grader"], model_sample=data["model_sample"],
                                   item=item))


class GraderValidateView(APIView):
    parser_classes = [JSONParser]
    @extend_schema(operation_id="fine_tuning_alpha_graders_validate",
                   request=GraderValidateRequest,
                   responses={200: GraderValidateResponse, **errors(400)})
    def post(self, request: Request) -> Response:
        organization_of(request)
        body = GraderValidateRequest(data=request.data)
        body.is_valid(raise_exception=True)
        return Response({"grader": grader_check(grader=body.validated_data["grader"])})
