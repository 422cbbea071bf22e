"""A real S3-protocol server on loopback for the object-storage tests: moto's standalone server, driven by the
real s3fs client, as s3fs's own test suite runs it.

The fixture points the AWS SDK's settings of this test process (and of the processes it starts: pool and Dask
workers) at the server: ``AWS_ENDPOINT_URL``, dummy keys, no instance metadata, no profile files.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.prefect_fixtures import free_port


@dataclass
class S3Server:
    """The running server: its endpoint, a client, and what starts and stops it."""

    endpoint: str
    server: Any
    port: int

    def fs(self, **options: Any) -> Any:
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        return s3fs.S3FileSystem(skip_instance_cache=True, **options)

    def new_bucket(self) -> str:
        name = f"test-{secrets.token_hex(6)}"
        self.fs().mkdir(name)
        return name

    def stop(self) -> None:
        """Stop answering and close the port (moto's ``stop`` alone keeps it bound, so the port could not be reused)."""
        self.server.stop()
        listening = getattr(self.server, "_server", None)
        if listening is not None:
            listening.server_close()

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.server.start()

    def uploads(self, bucket: str) -> list[Any]:
        """The multipart uploads of ``bucket`` not yet completed or aborted."""
        return list(self.fs().list_multipart_uploads(bucket))


S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, with this process's AWS settings pointed at it for the session."""
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    port = free_port()
    saved = {k: os.environ.get(k) for k in (*S3_ENV, "AWS_ENDPOINT_URL")}
    os.environ.update(S3_ENV, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    server = S3Server(f"http://127.0.0.1:{port}", None, port)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    """A new, empty bucket."""
    return s3_server.new_bucket()
