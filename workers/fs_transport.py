"""kombu's filesystem transport with atomic writes (the embedded, serverless broker).

Upstream ``_put`` creates the message file and then writes it; a consumer polling in between
moves and reads an empty file, and the JSON error kills the consuming worker (seen here: the
platform worker died mid-demo). Writing under a name no consumer matches and renaming it into
place makes each message appear whole or not at all.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

ALIAS = "posttrainfs"


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        tmp = os.path.join(self.data_folder_out, f".tmp-{uuid.uuid4()}")
        with open(tmp, "wb") as handle:
            handle.write(str_to_bytes(dumps(payload)))
        os.replace(tmp, os.path.join(self.data_folder_out, name))


class Transport(filesystem.Transport):
    Channel = Channel


def register() -> str:
    """Make ``posttrainfs://`` resolve to this transport; returns the URL to use."""
    TRANSPORT_ALIASES[ALIAS] = f"{__name__}:Transport"
    return f"{ALIAS}://"
