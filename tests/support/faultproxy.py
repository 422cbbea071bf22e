"""A reverse proxy on 127.0.0.1 in front of a store's server that answers some requests itself, as a throttled or
restarting store does: ``503 SlowDown`` (a seeded draw of ``rate``), or the connection cut before any answer (the
same draw); and every request ``503`` while :attr:`FaultProxy.outage` is set. The rest is forwarded as it is.

Point a client at :attr:`FaultProxy.endpoint` instead of the server's (``AWS_ENDPOINT_URL`` for S3).
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>fault-proxy</RequestId></Error>"
)

#: Headers that describe one hop's connection, not the request or the answer.
_HOP: frozenset[str] = frozenset({"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te"})


class FaultProxy:
    """The proxy (a context manager); :attr:`counts` says what it did to how many requests."""

    def __init__(self, upstream: str, rate: float = 0.0, seed: int = 0) -> None:
        host, _, port = upstream.removeprefix("http://").partition(":")
        self.upstream = (host, int(port))
        self.rate = rate
        self.outage = threading.Event()
        self.counts = {"forwarded": 0, "slowdown": 0, "cut": 0, "outage": 0}
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

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
                fate = "slowdown" if draw < self.rate / 2 else "cut" if draw < self.rate else "forwarded"
            self.counts[fate] += 1
            return fate

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

            def _any(self) -> None:
                body = self._body()
                fate = proxy._fate()
                if fate == "cut":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                if fate in ("slowdown", "outage"):
                    self._answer(503, [("Content-Type", "application/xml")], SLOW_DOWN)
                    return
                upstream = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                    self._answer(answer.status, answer.getheaders(), data)
                finally:
                    upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        return Handler
