"""A web server's files as a store (``http://``, ``https://``): read through fsspec's HTTP file system, each version
the server's ETag (or Last-Modified) with the size, every ranged read conditioned on it; never written, never
listed; its answers typed (a 503 retried no faster than once a second, a 404 or 403 named, a 412 a changed file).

These run in this process against the real nginx of the ``https_server`` fixture on its plain-HTTP port (the same
files; this process's SSL state is left alone): the HTTPS path is the crawl's tests' (``tests/crawl/test_https*``).
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

from selection_core.errors import InvalidBatchError, OutputPathError, ReadError, ServiceUnavailableError
from selection_storage.files import InputChangedError, Version
from selection_storage.stores import beside, listed_versions, location, store
from selection_storage.stores.failures import store_error
from selection_storage.stores.http import HTTPStatusError
from selection_storage.stores.retries import patience
from tests.support.faultproxy import FaultProxy
from tests.support.https_server import HttpsServer

DATA = bytes(range(256)) * 600  # 150 KiB


@pytest.fixture
def folder(https_server: HttpsServer) -> str:
    """A folder of the test's own under the server's root, with ``data.bin`` (:data:`DATA`) in it."""
    name = f"h-{uuid.uuid4().hex[:8]}"
    https_server.write(f"{name}/data.bin", DATA)
    return name


def _etag(server: HttpsServer, relative: str) -> str:
    """nginx's ETag of a file: its mtime and size in hex."""
    stat = os.stat(server.root / relative)
    return f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'


def test_a_files_version_is_its_size_and_etag_and_its_bytes_are_read_in_ranges(
    https_server: HttpsServer, folder: str
) -> None:
    p = location(https_server.plain_url(f"{folder}/data.bin"))
    version = store(p).version()
    assert version == Version(len(DATA), f"ETag:{_etag(https_server, f'{folder}/data.bin')}")
    assert store(p).listed_version() == version and store(p).kind() == "file" and store(p).size() == len(DATA)
    with store(p).reading() as (read_version, read):
        assert read_version == version and read(-1) == DATA
    with store(p).open(block_size=32 << 10) as stream:
        stream.seek(100_000)
        assert stream.read(1000) == DATA[100_000:101_000]
    assert store(p).read_span(version, 10, 20, b"<", b">") == b"<" + DATA[10:20] + b">"
    gets = [r for r in https_server.requests(under=f"/{folder}/") if r["method"] == "GET"]
    assert gets and all(r["status"] == 206 and r["if_match"] == version.tag.removeprefix("ETag:") for r in gets)


def test_a_file_replaced_after_its_version_was_taken_is_a_changed_input_not_a_mix(
    https_server: HttpsServer, folder: str
) -> None:
    p = location(https_server.plain_url(f"{folder}/data.bin"))
    version = store(p).version()
    https_server.write(f"{folder}/data.bin", DATA + b"more")  # another size: another ETag
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        store(p).read_span(version, 0, 100)
    assert store(p).version() != version


def test_many_files_versions_are_asked_together_and_a_missing_one_is_none(
    https_server: HttpsServer, folder: str
) -> None:
    for n in range(40):
        https_server.write(f"{folder}/w{n:02d}.warc.gz", b"x" * (n + 1))
    paths = [location(https_server.plain_url(f"{folder}/w{n:02d}.warc.gz")) for n in range(40)]
    paths.append(location(https_server.plain_url(f"{folder}/missing.warc.gz")))
    found = listed_versions(paths)
    assert found == [store(p).listed_version() for p in paths]
    assert found[-1] is None and [v.size for v in found[:-1] if v] == list(range(1, 41))


def test_nothing_is_written_to_a_web_server_and_its_folders_are_not_listed(
    https_server: HttpsServer, folder: str
) -> None:
    url = https_server.url(f"{folder}/out.json")
    for what in ("output", "data root"):
        with pytest.raises(OutputPathError, match=rf"{what} {url}: a web server's files are only read, never written"):
            location(url, None, what)
    with pytest.raises(OutputPathError, match="give another output: a path on this machine, or an s3://"):
        store(location(url)).stage()
    assert beside(location(url), "out_selected.json") == location("out_selected.json")  # a download's place
    with pytest.raises(InvalidBatchError, match="a web server gives no listing of its files"):
        store(location(https_server.plain_url(folder))).files()
    assert not (https_server.root / folder / "out.json").exists()


def test_a_servers_answers_are_typed_by_their_status() -> None:
    p = location("https://data.example.org/crawl-data/x.warc.gz")
    for status in (429, 500, 502, 503, 504):
        error = store_error(p, HTTPStatusError(status, "busy"))
        assert isinstance(error, ReadError) and error.transient and f"the server answered {status}" in str(error)
    for status in (403, 404, 410):
        error = store_error(p, HTTPStatusError(status, "no"))
        assert isinstance(error, InvalidBatchError) and not error.transient
        assert str(error) == f"{p}: the server answered {status}; check the URL"
    assert isinstance(store_error(p, HTTPStatusError(412, "changed")), InputChangedError)
    assert str(store_error(p, FileNotFoundError(2, "no such object"))).endswith("answered 404; check the URL")


def test_a_404_is_named_with_the_url(https_server: HttpsServer, folder: str) -> None:
    url = https_server.plain_url(f"{folder}/missing.json")
    with pytest.raises(InvalidBatchError, match=rf"^{url}: the server answered 404; check the URL$"):
        store(location(url)).version()


def test_a_503_is_tried_again_no_faster_than_once_a_second_until_the_server_answers(
    https_server: HttpsServer, folder: str
) -> None:
    with FaultProxy(https_server.plain_endpoint) as proxy:
        p = location(f"{proxy.endpoint}/{folder}/data.bin")
        proxy.outage.set()
        with pytest.raises(ReadError, match="the server answered 503; retry later"):  # no patience: at once
            store(p).version()
        assert proxy.counts["outage"] == 1
        threading.Timer(4.0, proxy.outage.clear).start()
        started = time.monotonic()
        with patience(60):
            assert store(p).read_span(store(p).version(), 0, 10) == DATA[:10]
        waited = time.monotonic() - started
    assert waited >= 4.0 and proxy.counts["outage"] >= 2
    assert proxy.counts["outage"] - 1 <= waited + 1  # at most one try a second


def test_a_body_cut_in_its_middle_is_read_again_from_where_it_was(https_server: HttpsServer, folder: str) -> None:
    with FaultProxy(https_server.plain_endpoint, rate=1.0, faults=("midbody",)) as proxy:
        p = location(f"{proxy.endpoint}/{folder}/data.bin")
        with store(p).open(block_size=64 << 10) as stream:
            with pytest.raises(ReadError, match="retry later"):
                stream.read(1000)  # no patience: the cut is the read's error
            proxy.rate = 0.0
            stream.seek(70_000)
            assert stream.read(1000) == DATA[70_000:71_000]
    ranges = [r["range"] for r in proxy.requests if r["method"] == "GET"]
    assert ranges[0].startswith("bytes=0-") and ranges[-1].startswith("bytes=70000-")


def test_a_server_whose_certificate_is_not_trusted_is_refused_in_one_line() -> None:
    import ssl

    p = location("https://127.0.0.1:1/x.warc.gz")
    error = store_error(p, ssl.SSLCertVerificationError(1, "certificate verify failed"))
    assert isinstance(error, ServiceUnavailableError) and not error.transient
    assert "the server's certificate is not trusted" in str(error) and "SSL_CERT_FILE" in str(error)
