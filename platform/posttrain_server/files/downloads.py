"""Downloads of stored objects (files, checkpoints, models, invoices), for the API and the
console alike: one place that streams from a folder or a bucket in constant memory."""

from __future__ import annotations

from django.http import FileResponse, HttpResponse, StreamingHttpResponse

from posttrain_server.api.errors import ApiError
from workers.storage import default_storage


def storage_download(key: str, filename: str, content_type: str) -> HttpResponse:
    """Stream an object to the client in constant memory, from a folder or a bucket."""
    storage = default_storage()
    path = storage.local_path(key)
    if path is not None:
        return FileResponse(path.open("rb"), as_attachment=True, filename=filename,
                            content_type=content_type)
    if not storage.exists(key):
        raise ApiError("The object is missing from storage", status_code=404)
    response = StreamingHttpResponse(storage.iter_chunks(key), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Content-Length"] = str(storage.size(key))
    return response
