"""The HTTPS fixture is a real server, as Common Crawl's is to a client: nginx over TLS with a certificate the test
trusts through ``SSL_CERT_FILE`` alone, Range requests, ETag and Last-Modified, conditional ranged reads, no
listing, an access log that counts the bytes read; and the fault proxy in front of it over TLS forwards, cuts a body
in its middle and answers ``503`` through an outage. fsspec's HTTP file system (aiohttp) runs in a subprocess with
``SSL_CERT_FILE`` in its environment, as a crawl's processes would: this process's SSL state is left alone."""

from __future__ import annotations

import http.client
import json
import os
import ssl
import subprocess
import sys
import uuid

import pytest

from tests.support.faultproxy import SLOW_DOWN, FaultProxy
from tests.support.https_server import HttpsServer

DATA = bytes(range(256)) * 400  # 100 KiB


@pytest.fixture
def folder(https_server: HttpsServer) -> str:
    """A folder of the test's own under the server's root, with ``data.bin`` (:data:`DATA`) in it."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    https_server.write(f"{name}/data.bin", DATA)
    return name


def _get(server: HttpsServer, path: str, headers: dict[str, str] | None = None, port: int | None = None):
    """A GET over TLS, trusting the fixture's CA by an explicit context: (status, headers, body)."""
    context = ssl.create_default_context(cafile=str(server.ca_file))
    connection = http.client.HTTPSConnection("127.0.0.1", port or server.https_port, context=context, timeout=10)
    try:
        connection.request("GET", "/" + path, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def _client(server: HttpsServer, script: str, *args: str, trust: bool = True) -> dict:
    """``script`` in a fresh Python, ``SSL_CERT_FILE`` the fixture's CA (with ``trust``): what it printed, as JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    env |= server.env if trust else {}
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_ranged_get_over_tls_is_a_206_of_those_bytes_with_etag_and_last_modified(
    https_server: HttpsServer, folder: str
) -> None:
    status, headers, body = _get(https_server, f"{folder}/data.bin", {"Range": "bytes=1000-1999"})
    assert status == 206 and body == DATA[1000:2000]
    assert headers["Content-Range"] == f"bytes 1000-1999/{len(DATA)}"
    assert headers["ETag"].startswith('"') and headers["Last-Modified"].endswith(" GMT")

    tail = _get(https_server, f"{folder}/data.bin", {"Range": f"bytes={len(DATA) - 10}-"})
    assert tail[0] == 206 and tail[2] == DATA[-10:]
    assert _get(https_server, f"{folder}/data.bin", {"Range": f"bytes={len(DATA)}-"})[0] == 416

    (first, last, out_of_range) = https_server.requests(folder, at_least=3)
    assert (first["scheme"], first["method"], first["uri"]) == ("https", "GET", f"/{folder}/data.bin")
    assert (first["status"], first["range"], first["body_bytes_sent"]) == (206, "bytes=1000-1999", 1000)
    assert first["completion"] == "OK" and first["request_time"] >= 0
    assert (last["range"], last["body_bytes_sent"], out_of_range["status"]) == (f"bytes={len(DATA) - 10}-", 10, 416)
    assert https_server.body_bytes(f"{folder}/data.bin") >= 1010


def test_a_ranged_get_of_another_version_is_refused_412_and_a_folder_is_not_listed(
    https_server: HttpsServer, folder: str
) -> None:
    path = f"{folder}/data.bin"
    etag = _get(https_server, path)[1]["ETag"]
    assert _get(https_server, path, {"Range": "bytes=0-9", "If-Match": etag})[0] == 206
    assert _get(https_server, path, {"Range": "bytes=0-9", "If-Match": '"another-version"'})[0] == 412
    before = "Thu, 01 Jan 2015 00:00:00 GMT"
    assert _get(https_server, path, {"Range": "bytes=0-9", "If-Unmodified-Since": before})[0] == 412
    assert _get(https_server, f"{folder}/")[0] == 404
    assert _get(https_server, f"{folder}/missing.bin")[0] == 404


FSSPEC_CLIENT = """
import json, ssl, sys, urllib.request
import fsspec
url, = sys.argv[1:]
fs = fsspec.filesystem("https", skip_instance_cache=True)
try:
    info = fs.info(url)
except FileNotFoundError as exc:
    print(json.dumps({"refused": repr(exc.__cause__)}))
    raise SystemExit(0)
found = {"size": info["size"], "etag": info.get("ETag"), "range": fs.cat_file(url, start=100, end=110).hex()}
found["urllib"] = urllib.request.urlopen(url, context=ssl.create_default_context()).status
print(json.dumps(found))
"""


def test_fsspecs_https_file_system_and_pythons_default_context_trust_the_server_through_ssl_cert_file(
    https_server: HttpsServer, folder: str
) -> None:
    url = https_server.url(f"{folder}/data.bin")
    found = _client(https_server, FSSPEC_CLIENT, url)
    assert found["size"] == len(DATA) and found["etag"].startswith('"')
    assert bytes.fromhex(found["range"]) == DATA[100:110] and found["urllib"] == 200
    refused = _client(https_server, FSSPEC_CLIENT, url, trust=False)
    assert "CERTIFICATE_VERIFY_FAILED" in refused["refused"]


CUT_CLIENT = """
import json, sys
import aiohttp, fsspec
fs = fsspec.filesystem("https", skip_instance_cache=True)
try:
    fs.cat_file(sys.argv[1])
    print(json.dumps({"error": None}))
except aiohttp.ClientPayloadError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
"""


def test_the_tls_fault_proxy_forwards_cuts_a_body_in_its_middle_and_answers_503_through_an_outage(
    https_server: HttpsServer, folder: str
) -> None:
    path = f"{folder}/data.bin"
    with FaultProxy(https_server.plain_endpoint, tls=https_server.tls) as proxy:
        assert proxy.endpoint.startswith("https://127.0.0.1:")
        port = int(proxy.endpoint.rsplit(":", 1)[1])
        assert _get(https_server, path, port=port)[::2] == (200, DATA)
        status, headers, body = _get(https_server, path, {"Range": "bytes=10-19"}, port=port)
        assert (status, body, headers["ETag"]) == (206, DATA[10:20], _get(https_server, path)[1]["ETag"])
        proxy.outage.set()
        assert _get(https_server, path, port=port)[0] == 503
        proxy.outage.clear()
        assert _get(https_server, path, port=port)[0] == 200
    assert proxy.counts == {"forwarded": 3, "slowdown": 0, "cut": 0, "midbody": 0, "outage": 1}
    assert [(r["range"], r["fate"], r["status"], r["body_bytes"]) for r in proxy.requests] == [
        (None, "forwarded", 200, len(DATA)),
        ("bytes=10-19", "forwarded", 206, 10),
        (None, "outage", 503, len(SLOW_DOWN)),
        (None, "forwarded", 200, len(DATA)),
    ]

    with FaultProxy(https_server.plain_endpoint, rate=1.0, faults=("midbody",), tls=https_server.tls) as proxy:
        port = int(proxy.endpoint.rsplit(":", 1)[1])
        context = ssl.create_default_context(cafile=str(https_server.ca_file))
        connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
        connection.request("GET", f"/{path}")
        answer = connection.getresponse()
        assert (answer.status, answer.getheader("Content-Length")) == (200, str(len(DATA)))
        with pytest.raises(http.client.IncompleteRead) as short:
            answer.read()
        assert len(short.value.partial) == len(DATA) // 2
        connection.close()
        found = _client(https_server, CUT_CLIENT, proxy.url(path))
        assert found["error"] == "ClientPayloadError", found
    forwarded = [r for r in https_server.requests(folder, at_least=6) if r["scheme"] == "http"]
    assert len(forwarded) == 5  # what the proxies forwarded (not the outage's 503), over nginx's plain listener
    assert proxy.counts["midbody"] >= 2 and proxy.counts["cut"] == proxy.counts["slowdown"] == 0

    with FaultProxy(https_server.plain_endpoint, rate=1.0, faults=("slowdown",), tls=https_server.tls) as proxy:
        port = int(proxy.endpoint.rsplit(":", 1)[1])
        status, _, body = _get(https_server, path, port=port)
        assert status == 503 and b"<Code>SlowDown</Code>" in body
    assert proxy.counts["slowdown"] == 1
