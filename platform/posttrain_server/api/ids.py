"""Opaque public identifiers (``ftjob-…``, ``file-…``): never a sequential integer.

Random, so they leak neither volume nor order; prefixed, so a user pasting one in the wrong
place gets an error that says which kind of object it was.
"""

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def new_id(prefix: str, length: int = 24) -> str:
    return f"{prefix}-" + "".join(secrets.choice(_ALPHABET) for _ in range(length))
