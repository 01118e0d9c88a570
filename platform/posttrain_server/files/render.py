"""OpenAI's file object, plus ``validation`` (our line-numbered report)."""

from __future__ import annotations

from typing import Any

from posttrain_server.files.models import File


def file_object(file: File) -> dict[str, Any]:
    return {
        "id": file.id,
        "object": "file",
        "bytes": file.bytes,
        "created_at": int(file.created_at.timestamp()),
        "expires_at": None,
        "filename": file.filename,
        "purpose": file.purpose,
        "status": file.status,
        "status_details": file.status_details or None,
        "validation": file.validation,
    }
