"""A real S3-compatible server for tests: moto in server mode, on a free loopback port.

The storage code talks to it over HTTP with boto3 exactly as it would to MinIO or AWS.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


S3_ENV = {"AWS_ACCESS_KEY_ID": "posttrain-test", "AWS_SECRET_ACCESS_KEY": "posttrain-test",
          "AWS_DEFAULT_REGION": "us-east-1"}


@contextmanager
def s3_server(bucket: str) -> Iterator[str]:
    """Start moto, create ``bucket``, yield the endpoint URL; credentials go in os.environ."""
    import boto3
    from moto.server import ThreadedMotoServer

    os.environ.update(S3_ENV)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()
