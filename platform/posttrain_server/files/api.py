"""Files API, OpenAI's shape: upload, list, retrieve, delete, content."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from posttrain_server.api.errors import ApiError
from posttrain_server.api.idempotency import idempotent
from posttrain_server.api.pagination import paginate
from posttrain_server.api.schema import errors, list_of, page_parameters
from posttrain_server.files import selectors, services
from posttrain_server.files.downloads import storage_download
from posttrain_server.files.render import file_object
from posttrain_server.tenancy.auth import organization_of

FileSerializer = inline_serializer(name="File", fields={
    "id": serializers.CharField(), "object": serializers.CharField(),
    "bytes": serializers.IntegerField(), "created_at": serializers.IntegerField(),
    "expires_at": serializers.IntegerField(allow_null=True),
    "filename": serializers.CharField(), "purpose": serializers.CharField(),
    "status": serializers.ChoiceField(choices=["uploaded", "processed", "error"]),
    "status_details": serializers.CharField(allow_null=True),
    "validation": serializers.JSONField(
        allow_null=True, help_text="Posttrain extension: format, line_count, example_count, "
        "error_count and the first errors as {line, message}."),
})

UploadSerializer = inline_serializer(name="FileUpload", fields={
    "file": serializers.FileField(), "purpose": serializers.ChoiceField(choices=["fine-tune"]),
})


class FileListView(APIView):
    parser_classes = [MultiPartParser]
    @extend_schema(operation_id="files_list", responses={200: list_of("FileList", FileSerializer),
                                                         **errors(400, 404)},
                   parameters=[*page_parameters(), OpenApiParameter("purpose", str)])
    def get(self, request: Request) -> Response:
        files = selectors.file_list(organization=organization_of(request),
                                    purpose=request.query_params.get("purpose"))
        return Response(paginate(request, files, file_object))

    @extend_schema(operation_id="files_create", request={"multipart/form-data": UploadSerializer},
                   responses={200: FileSerializer, **errors(400, 409, 413)})
    @idempotent
    def post(self, request: Request) -> Response:
        upload = request.FILES.get("file")
        if upload is None:
            raise ApiError("Missing multipart field 'file'", param="file")
        purpose = request.data.get("purpose")
        if not purpose:
            raise ApiError("Missing field 'purpose'", param="purpose")
        file = services.file_upload(organization=organization_of(request), upload=upload,
                                    purpose=purpose)
        return Response(file_object(file))


class FileDetailView(APIView):
    @extend_schema(operation_id="files_retrieve", responses={200: FileSerializer, **errors(404)})
    def get(self, request: Request, file_id: str) -> Response:
        file = selectors.file_get(organization=organization_of(request), file_id=file_id)
        return Response(file_object(file))

    @extend_schema(operation_id="files_delete", responses={200: inline_serializer(
        name="FileDeleted", fields={"id": serializers.CharField(),
                                    "object": serializers.CharField(),
                                    "deleted": serializers.BooleanField()}),
        **errors(404, 409)})
    def delete(self, request: Request, file_id: str) -> Response:
        file = services.file_delete(organization=organization_of(request), file_id=file_id)
        return Response({"id": file.id, "object": "file", "deleted": True})


class FileContentView(APIView):
    @extend_schema(operation_id="files_content",
                   responses={(200, "application/octet-stream"): bytes, **errors(404)})
    def get(self, request: Request, file_id: str) -> HttpResponse:
        file = selectors.file_get(organization=organization_of(request), file_id=file_id)
        return storage_download(file.storage_key, file.filename, "application/octet-stream")
