"""Unpack a downloaded model or checkpoint archive without trusting its member names.

A tar can name ``../../.bashrc``, an absolute path, or a link pointing outside the target; a
model download must never write outside the folder the user chose. Every member is checked
before anything is written (so a bad archive leaves the folder untouched), only regular files
and folders are accepted, and Python's ``data`` extraction filter is applied on top.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from posttrain._exceptions import PosttrainError


class UnsafeArchiveError(PosttrainError):
    """The archive holds a member that would land outside the target folder, or a link."""


def safe_extract(archive: Path, destination: Path) -> list[Path]:
    """Extract ``archive`` into ``destination``; the paths of the regular files written."""
    destination.mkdir(parents=True, exist_ok=True)
    root = destination.resolve()
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for member in members:
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchiveError(f"archive member {member.name!r} is a link or a "
                                         "device; refusing to extract")
            target = (root / member.name).resolve()
            if Path(member.name).is_absolute() or not target.is_relative_to(root):
                raise UnsafeArchiveError(f"archive member {member.name!r} would be written "
                                         f"outside {destination}; refusing to extract")
        tar.extractall(root, members=members, filter="data")
    return [root / member.name for member in members if member.isfile()]
