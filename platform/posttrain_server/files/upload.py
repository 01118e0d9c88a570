"""An upload handler that streams to disk and stops at the configured size cap (413).

The declared Content-Length is checked before a byte is read; chunked uploads without one are
counted as they arrive, so an oversized upload never fills the disk.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from rest_framework.exceptions import APIException

# Multipart framing (boundaries, headers, the purpose field) on top of the file itself.
_MULTIPART_SLACK = 64 * 1024


class UploadTooLarge(APIException):
    status_code = 413
    default_code = "file_too_large"

    def __init__(self) -> None:
        super().__init__(
            f"File exceeds the upload limit of {settings.UPLOAD_MAX_BYTES} bytes "
            "(POSTTRAIN_UPLOAD_MAX_BYTES)."
        )


class CappedUploadHandler(TemporaryFileUploadHandler):
    def handle_raw_input(self, input_data: Any, META: Any, content_length: int, boundary: Any,
                         encoding: str | None = None) -> None:
        if content_length and content_length > settings.UPLOAD_MAX_BYTES + _MULTIPART_SLACK:
            raise UploadTooLarge()
        self._received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self._received = getattr(self, "_received", 0) + len(raw_data)
        if self._received > settings.UPLOAD_MAX_BYTES:
            raise UploadTooLarge()
        return super().receive_data_chunk(raw_data, start)
