"""The HTTP requests ``select`` sends to an object store: per chunk read, and in all, HEAD and GET apart.

A batch of ``--articles`` distinct articles (built as ``_batches.build_distinct`` builds them) is put in an
emulator of the store, then ``selection_engine.select_file(url, chunk_articles=N)`` runs in this process. Every
request the store's client sends through aiohttp (s3fs through aiobotocore, gcsfs, adlfs through azure-core) is
counted, by method; those sent while a chunk is read (``ObjectStore.read_span``) are counted apart, so the figure
"per chunk" is what one chunk's read costs (the plan's and the upload's requests are in the totals only).

    python benchmarks/store_requests.py                       # S3: moto's server on 127.0.0.1
    python benchmarks/store_requests.py --store gs            # GCS: fake-gcs-server
    python benchmarks/store_requests.py --store az            # Azure: Azurite (as the tests find it)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _batches import ROOT, build_distinct  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.support.object_stores import SERVERS, environment  # noqa: E402
from tests.support.prefect_fixtures import free_port  # noqa: E402

BUCKET = "bench"


@contextlib.contextmanager
def running_store(protocol: str, scratch: Path) -> Iterator[Any]:
    """The store's emulator on 127.0.0.1 (as the tests run it), this process pointed at it; yields a client."""
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server: no line per request
    server = SERVERS[protocol](free_port(), scratch)
    server.start()
    os.environ.update(environment(server))
    try:
        yield server.fs()
    finally:
        server.stop()


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

        from selection_storage.stores.objects import ObjectStore

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
    parser.add_argument("--store", choices=sorted(SERVERS), default="s3")
    parser.add_argument("--articles", type=int, default=2000, help="articles of the built batch")
    parser.add_argument("--chunk-articles", type=int, default=200, help="articles of a chunk")
    args = parser.parse_args(argv)

    from selection_engine import select_file

    scratch = Path(tempfile.mkdtemp(prefix="cs-bench-requests-"))
    try:
        with running_store(args.store, scratch) as fs:
            batch = scratch / "batch_extracted.json"
            size = build_distinct(batch, args.articles)
            fs.mkdir(BUCKET)
            fs.put_file(str(batch), f"{BUCKET}/{batch.name}")
            url = f"{args.store}://{BUCKET}/{batch.name}"
            counter = Counter()
            with counter.installed():
                result = select_file(url, chunk_articles=args.chunk_articles)
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
