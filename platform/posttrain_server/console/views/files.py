"""Datasets: list, upload (with a progress bar where JavaScript runs), the line-numbered
validation report, delete. Uploads go through the API's own upload service and its size cap."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from posttrain_server.api.errors import ApiError
from posttrain_server.console.access import console_view, org_of
from posttrain_server.files import selectors, services
from posttrain_server.files.downloads import storage_download
from posttrain_server.files.models import FileStatus


def _wants_json(request: HttpRequest) -> bool:
    return request.headers.get("X-Requested-With") == "XMLHttpRequest"


@console_view
def file_list(request: HttpRequest) -> HttpResponse:
    files = selectors.file_list(organization=org_of(request))
    return render(request, "console/files/list.html", {"files": files.order_by("-created_at")})


def _csrf_refusal(request: HttpRequest) -> HttpResponse | None:
    """Django's CSRF check, run here rather than in the middleware: the middleware reads the
    multipart body first, and an upload over the size cap would end there as a server error
    instead of a clear message."""
    return CsrfViewMiddleware(lambda _: HttpResponse()).process_view(request, None, (), {})


@csrf_exempt  # checked in the view, see _csrf_refusal
@require_POST
@console_view
def file_upload(request: HttpRequest) -> HttpResponse:
    """Multipart upload; answers JSON to the page's script and a redirect to a plain form."""
    try:
        refused = _csrf_refusal(request)
        if refused is not None:
            return refused
        upload = request.FILES.get("file")  # reading FILES applies the upload size cap
        if upload is None:
            raise ApiError("Choose a file to upload", param="file")
        file = services.file_upload(organization=org_of(request),
                                    upload=upload, purpose=request.POST.get("purpose",
                                                                            "fine-tune"))
    except (ApiError, APIException) as exc:
        message = exc.message if isinstance(exc, ApiError) else str(exc.detail)
        if _wants_json(request):
            return JsonResponse({"error": message}, status=400)
        messages.error(request, message)
        return redirect("console:files")
    url = reverse("console:file", args=[file.id])
    if _wants_json(request):
        return JsonResponse({"id": file.id, "url": url})
    return redirect(url)


@console_view
def file_detail(request: HttpRequest, file_id: str) -> HttpResponse:
    file = selectors.file_get(organization=org_of(request),
                              file_id=file_id)
    template = ("console/files/_report.html" if request.GET.get("fragment")
                else "console/files/detail.html")
    response = render(request, template, {"file": file,
                                          "validating": file.status == FileStatus.UPLOADED})
    if file.status != FileStatus.UPLOADED:
        response["X-Live-Done"] = "1"
    return response


@console_view
def file_content(request: HttpRequest, file_id: str) -> HttpResponse:
    file = selectors.file_get(organization=org_of(request),
                              file_id=file_id)
    return storage_download(file.storage_key, file.filename, "application/octet-stream")


@require_POST
@console_view
def file_delete(request: HttpRequest, file_id: str) -> HttpResponse:
    try:
        file = services.file_delete(organization=org_of(request),
                                    file_id=file_id)
    except ApiError as exc:
        if exc.status_code == 404:
            raise
        messages.error(request, exc.message)
        return redirect("console:file", file_id=file_id)
    messages.success(request, f"Deleted {file.filename} ({file.id})")
    return redirect("console:files")
