"""A reverse proxy on 127.0.0.1 in front of a store's or an HTTP server that answers some requests itself, as a
throttled or restarting server does. Each request draws (seeded) one fate: with probability ``rate`` one of
``faults``, in equal shares, else it is forwarded as it is. The kinds of fault:

- ``"slowdown"``: answered ``503 SlowDown`` (S3's XML body; Common Crawl's HTTPS service answers its SlowDown so);
- ``"cut"``: the connection cut before any answer;
- ``"midbody"``: the upstream's answer forwarded, status and headers (its real ``Content-Length``) as they are, and
  the connection cut after about half of the body, as a server that dies mid-stream does. Only a ``200``/``206``
  with a body of 2 bytes or more can be cut so: any other answer (a HEAD's, an error's) is forwarded whole and
  counted ``forwarded``.

The default mix, ``faults=("slowdown", "cut")``, is the S3 tests' (the same draws for a seed as before ``faults``
existed). While :attr:`FaultProxy.outage` is set every request is answered ``503``; with
``outage_cuts_streams=True`` a body being forwarded when it is set is cut too, as a server going down does.

Point a client at :attr:`FaultProxy.endpoint` instead of the server's (``AWS_ENDPOINT_URL`` for S3). With
``tls=(certfile, keyfile)`` the proxy listens over TLS (its endpoint is ``https://``) in front of a plain-HTTP
upstream: the TLS-terminating proxy of the HTTPS tests (``tests/support/https_server.py``: ``tls=server.tls``,
upstream ``server.plain_endpoint``). :attr:`FaultProxy.counts` says what it did to how many requests and
:attr:`FaultProxy.requests` lists each one.

:meth:`FaultProxy.hold` keeps the next request that matches (its body received) from the upstream until
:attr:`FaultProxy.release` is set, then forwards it as it is (the upstream's status in :attr:`FaultProxy.held_status`):
a client frozen in the middle of that request, whose request the store evaluates only when it goes on.
"""

from __future__ import annotations

import http.client
import random
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>fault-proxy</RequestId></Error>"
)

#: The kinds of fault a proxy can draw.
FAULTS = ("slowdown", "cut", "midbody")

#: Headers that describe one hop's connection, not the request or the answer.
_HOP: frozenset[str] = frozenset({"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te"})

#: The size of the writes of a streamed body.
_CHUNK = 64 * 1024


class _Server(ThreadingHTTPServer):
    """The listening side: each connection in a thread of its own, its TLS handshake (if any) made there."""

    daemon_threads = True
    context: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.context is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(60)  # a client that never completes its handshake does not hold a thread forever
        secure = self.context.wrap_socket(request, server_side=True)
        try:
            secure.settimeout(None)
            super().finish_request(secure, client_address)
        finally:
            secure.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):  # a client gone, a handshake refused, a connection cut
            return
        super().handle_error(request, client_address)


class FaultProxy:
    """The proxy (a context manager); :attr:`counts` says what it did to how many requests, :attr:`requests` lists
    them: method, path, range (the Range header or None), fate, status (None if cut before any answer) and
    body_bytes (of body sent to the client)."""

    def __init__(
        self,
        upstream: str,
        rate: float = 0.0,
        seed: int = 0,
        *,
        faults: tuple[str, ...] = ("slowdown", "cut"),
        tls: tuple[str, str] | None = None,
        outage_cuts_streams: bool = False,
    ) -> None:
        unknown = set(faults) - set(FAULTS)
        if not faults or unknown:
            raise ValueError(f"faults must be some of {FAULTS}, not {faults}")
        host, _, port = upstream.removeprefix("http://").rstrip("/").partition(":")
        self.upstream = (host, int(port))
        self.rate = rate
        self.faults = tuple(faults)
        self.outage_cuts_streams = outage_cuts_streams
        self.outage = threading.Event()
        self.counts = {"forwarded": 0, **dict.fromkeys(FAULTS, 0), "outage": 0}
        self.requests: list[dict[str, Any]] = []
        self.held = threading.Event()  # set once a request is being held
        self.release = threading.Event()
        self.held_status: int | None = None  # the upstream's answer to it, once forwarded
        self._hold: Callable[[str, str], bool] | None = None
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.context = context
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        scheme = "https" if self._server.context is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        """The proxy's URL of an upstream path (``/crawl-data/...``)."""
        return f"{self.endpoint}/{path.lstrip('/')}"

    def hold(self, matches: Callable[[str, str], bool]) -> None:
        """Hold the next request for which ``matches(method, path)`` until :attr:`release` is set."""
        self._hold = matches

    def _held(self, method: str, path: str) -> bool:
        with self._lock:
            if self._hold is None or not self._hold(method, path):
                return False
            self._hold = None
        self.held.set()
        self.release.wait()
        return True

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _fate(self) -> str:
        with self._lock:
            if self.outage.is_set():
                fate = "outage"
            else:
                draw = self._random.random()
                shares = len(self.faults)
                fate = next(
                    (kind for i, kind in enumerate(self.faults) if draw < self.rate * (i + 1) / shares), "forwarded"
                )
            self.counts[fate] += 1
            return fate

    def _record(self, entry: dict[str, Any], recount: str | None = None) -> None:
        with self._lock:
            if recount is not None:  # the fate drawn could not be done: counted as what was done instead
                self.counts[entry["fate"]] -= 1
                self.counts[recount] += 1
                entry["fate"] = recount
            self.requests.append(entry)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _body(self) -> bytes:
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    chunks = []
                    while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                head = self.command == "HEAD"  # its Content-Length is the object's, with no body
                for name, value in headers:
                    if name.lower() not in _HOP and (head or name.lower() != "content-length"):
                        self.send_header(name, value)
                if not head:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _cut(self) -> None:
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

            def _any(self) -> None:
                body = self._body()
                held = proxy._held(self.command, self.path)
                fate = "forwarded" if held else proxy._fate()
                entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                         "fate": fate, "status": None, "body_bytes": 0, "held": held}  # fmt: skip
                if fate == "cut":
                    self._cut()
                    proxy._record(entry)
                    return
                if fate in ("slowdown", "outage"):
                    self._answer(503, [("Content-Type", "application/xml")], SLOW_DOWN)
                    proxy._record(entry | {"status": 503, "body_bytes": len(SLOW_DOWN)})
                    return
                upstream = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    entry["status"] = answer.status
                    if held:  # its client may have gone meanwhile: known before it is answered
                        proxy.held_status = answer.status
                    if self.command == "HEAD" or answer.length is None:  # no body, or a chunked one: as it is
                        data = answer.read()
                        self._answer(answer.status, answer.getheaders(), data)
                        entry["body_bytes"] = 0 if self.command == "HEAD" else len(data)
                        proxy._record(entry, "forwarded" if fate == "midbody" else None)
                        return
                    self._stream(answer, fate, entry)
                finally:
                    upstream.close()

            def _stream(self, answer: http.client.HTTPResponse, fate: str, entry: dict[str, Any]) -> None:
                """The upstream's answer, its body in chunks as it comes; cut after half of it for a midbody
                fault, or where an outage begins if those cut streams."""
                length = answer.length or 0
                midbody = fate == "midbody" and answer.status in (200, 206) and length >= 2
                stop_at = length // 2 if midbody else length
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in _HOP:
                        self.send_header(name, value)
                self.end_headers()
                sent = 0
                while sent < stop_at:
                    if proxy.outage_cuts_streams and proxy.outage.is_set():
                        self._cut()
                        proxy._record(entry | {"body_bytes": sent}, "outage")
                        return
                    data = answer.read(min(_CHUNK, stop_at - sent))
                    if not data:
                        break
                    self.wfile.write(data)
                    sent += len(data)
                entry["body_bytes"] = sent
                if midbody:
                    self._cut()
                    proxy._record(entry)
                else:
                    proxy._record(entry, "forwarded" if fate == "midbody" else None)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        return Handler
