"""A real HTTPS server on 127.0.0.1 that serves files as Common Crawl's ``https://data.commoncrawl.org/`` does, for
the tests of reading a crawl over HTTPS: Debian's ``nginx`` (the package ``nginx``, which ``.ci/run`` installs), as
a child process of the test session, with a configuration, certificate, logs and temporary files of its own in a
temporary folder.

What it serves, from :attr:`HttpsServer.root`, on two listeners of 127.0.0.1 on free ports:

- over TLS (:meth:`HttpsServer.url`), with a certificate for ``IP:127.0.0.1`` and ``DNS:localhost`` signed by a CA
  the fixture makes (``openssl``); a client trusts it through ``SSL_CERT_FILE=`` :attr:`HttpsServer.ca_file`, set
  in the environment of the process *before* it imports aiohttp (aiohttp builds its default SSL context, with
  ``ssl.create_default_context()``, when ``aiohttp.connector`` is imported): a test runs its client in a
  subprocess with that environment (without it, fsspec's ``info`` of a URL says ``FileNotFoundError``, the
  certificate's refusal only in its ``__cause__``);
- over plain HTTP (:meth:`HttpsServer.plain_url`), the same files: the upstream of a TLS-terminating
  :class:`~tests.support.faultproxy.FaultProxy` (``tls=`` :attr:`HttpsServer.tls`).

Files only, as Common Crawl's server: Range requests (``206``, ``416``), ``ETag`` and ``Last-Modified``,
``If-Match``/``If-Unmodified-Since`` honoured (``412``), ``If-Range``, ``HEAD``; no directory listing (a folder is
a ``404``), no compression. nginx's ETag is its file's mtime (whole seconds) and size: a test that changes a file
and expects a new version changes its size or moves its mtime (``os.utime``). Every request is one JSON line of the
access log: :meth:`HttpsServer.requests` parses them (method, uri, status, the Range asked for, the body's bytes
sent, whether the answer was completed, the time it took), so a test counts the bytes read per file.

One server per test session (per xdist worker): the ``https_server`` fixture, registered in ``tests/conftest.py``.
Tests write their files under a folder of their own in :attr:`HttpsServer.root`. Without ``nginx`` or ``openssl``
its tests are skipped, or fail under ``CONTENT_SELECTION_REQUIRE_STORES=1`` (as in CI).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.prefect_fixtures import free_port

START_SECONDS = 30

#: One access-log line per request, JSON (nginx escapes the values).
LOG_FORMAT = (
    '{"msec":"$msec","scheme":"$scheme","port":"$server_port","method":"$request_method","uri":"$uri",'
    '"request_uri":"$request_uri","status":"$status","range":"$http_range","if_match":"$http_if_match",'
    '"if_unmodified_since":"$http_if_unmodified_since","if_range":"$http_if_range",'
    '"body_bytes_sent":"$body_bytes_sent","bytes_sent":"$bytes_sent","completion":"$request_completion",'
    '"request_time":"$request_time","connection":"$connection","user_agent":"$http_user_agent"}'
)

_INTEGERS = ("port", "status", "body_bytes_sent", "bytes_sent", "connection")
_FLOATS = ("msec", "request_time")
_OPTIONAL = ("range", "if_match", "if_unmodified_since", "if_range", "user_agent")


def nginx_binary() -> str | None:
    """``nginx``: ``$CONTENT_SELECTION_NGINX_BIN``, else the one on PATH, else Debian's ``/usr/sbin/nginx`` (not on a
    user's PATH)."""
    for candidate in (os.environ.get("CONTENT_SELECTION_NGINX_BIN"), shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A self-signed CA and a server certificate it signs, for ``IP:127.0.0.1`` and ``DNS:localhost``, valid for
    30 days, in ``folder``: (``ca.pem``, ``server.pem``, ``server.key``). The ``openssl`` command line makes them
    (P-256 keys: quick)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found (apt-get install openssl)")
    ca_key, ca, key, csr, cert = (folder / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    extensions = folder / "server.ext"
    extensions.write_text(
        "subjectAltName = IP:127.0.0.1, DNS:localhost\n"
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid, issuer\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    commands = [
        [openssl, "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "30",
         "-subj", "/CN=content-selection test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        [openssl, "req", "-new", *ec, "-keyout", str(key), "-out", str(csr), "-subj", "/CN=localhost"],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
         "-out", str(cert), "-days", "30", "-extfile", str(extensions)],
    ]  # fmt: skip
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:3])} failed: {done.stderr.strip()[-2000:]}")
    return ca, cert, key


def nginx_config(folder: Path, root: Path, https_port: int, http_port: int, cert: Path, key: Path) -> str:
    """The configuration of a foreground nginx whose every file is in ``folder``, serving ``root`` on both ports."""
    temp = folder / "temp"
    user = "user root;\n" if os.geteuid() == 0 else ""  # root: the workers stay root (no need of www-data)
    return f"""\
{user}daemon off;
master_process on;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;

events {{
    worker_connections 1024;
}}

http {{
    default_type application/octet-stream;
    types {{
        text/html html;
        text/plain txt;
        application/json json;
    }}
    log_format probe escape=json '{LOG_FORMAT}';
    access_log {folder / "access.log"} probe;

    client_body_temp_path {temp / "client_body"};
    proxy_temp_path {temp / "proxy"};
    fastcgi_temp_path {temp / "fastcgi"};
    uwsgi_temp_path {temp / "uwsgi"};
    scgi_temp_path {temp / "scgi"};

    sendfile on;
    keepalive_timeout 65;
    server_tokens off;
    gzip off;
    etag on;
    autoindex off;
    if_modified_since exact;
    max_ranges 16;

    server {{
        listen 127.0.0.1:{https_port} ssl;
        listen 127.0.0.1:{http_port};
        server_name localhost 127.0.0.1;
        root {root};
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {{
            try_files $uri =404;
        }}
    }}
}}
"""


class HttpsServer:
    """nginx serving :attr:`root` over HTTPS (:meth:`url`) and plain HTTP (:meth:`plain_url`) on 127.0.0.1; a
    context manager, or :meth:`start` and :meth:`stop`."""

    def __init__(self, folder: Path | None = None, root: Path | None = None, binary: str | None = None) -> None:
        self.folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="cs-nginx-"))
        self.root = Path(root) if root is not None else self.folder / "root"
        self.binary = binary or nginx_binary()
        self.https_port = self.http_port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.ca_file = self.cert_file = self.key_file = Path()

    # -- addresses ---------------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.https_port}"

    @property
    def plain_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def url(self, relative: str = "") -> str:
        """The HTTPS URL of ``relative`` (a path under :attr:`root`, as it goes in a URL)."""
        return f"{self.endpoint}/{relative.lstrip('/')}"

    def plain_url(self, relative: str = "") -> str:
        """The plain-HTTP URL of ``relative``."""
        return f"{self.plain_endpoint}/{relative.lstrip('/')}"

    @property
    def tls(self) -> tuple[str, str]:
        """(certificate, key) of the server: what a TLS-terminating proxy in front of :attr:`plain_endpoint` shows."""
        return str(self.cert_file), str(self.key_file)

    @property
    def env(self) -> dict[str, str]:
        """The environment of a client process that trusts the server (``SSL_CERT_FILE``)."""
        return {"SSL_CERT_FILE": str(self.ca_file)}

    def write(self, relative: str, data: bytes) -> str:
        """Put ``data`` at ``relative`` under :attr:`root` (its folders made); its HTTPS URL."""
        path = self.root / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.url(relative)

    # -- the access log ----------------------------------------------------------------------------------------
    def requests(self, under: str = "", at_least: int = 0, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The requests the server answered so far whose path starts with ``/under``, oldest first, each a dict:
        ``scheme`` (https or http), ``method``, ``uri`` (decoded, no query), ``request_uri``, ``status``, ``range``
        (the Range header, or None), ``if_match``, ``if_unmodified_since``, ``if_range``, ``body_bytes_sent``,
        ``bytes_sent``, ``completion`` ("OK" when the whole answer was sent), ``request_time`` (seconds), ``msec``
        (when it ended, Unix time), ``connection``. nginx writes a request's line just after its last byte: with
        ``at_least``, wait up to ``timeout`` seconds for that many."""
        prefix = "/" + under.lstrip("/")
        deadline = time.monotonic() + timeout
        while True:
            found = [r for r in self._log() if r["uri"].startswith(prefix)]
            if len(found) >= at_least or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

    def body_bytes(self, relative: str, at_least: int = 0) -> int:
        """The bytes of body the server sent for ``relative`` (every request of it: what a client read of it)."""
        path = "/" + relative.lstrip("/")
        return sum(r["body_bytes_sent"] for r in self.requests(relative, at_least) if r["uri"] == path)

    def _log(self) -> list[dict[str, Any]]:
        log = self.folder / "access.log"
        if not log.exists():
            return []
        entries = []
        for line in log.read_text().splitlines():
            if not line.endswith("}"):  # a line being written
                continue
            entry: dict[str, Any] = json.loads(line)
            for name in _INTEGERS:
                entry[name] = int(entry[name] or 0)
            for name in _FLOATS:
                entry[name] = float(entry[name] or 0)
            for name in _OPTIONAL:
                entry[name] = entry[name] or None
            entries.append(entry)
        return entries

    # -- life --------------------------------------------------------------------------------------------------
    def start(self) -> HttpsServer:
        if self.binary is None:
            raise RuntimeError("nginx not found (apt-get install nginx)")
        (self.folder / "temp").mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        self.ca_file, self.cert_file, self.key_file = make_certificates(self.folder)
        for _ in range(3):  # a free port may be taken again before nginx binds it
            self.https_port, self.http_port = free_port(), free_port()
            config = self.folder / "nginx.conf"
            config.write_text(
                nginx_config(self.folder, self.root, self.https_port, self.http_port, self.cert_file, self.key_file)
            )
            if self._spawn(config):
                return self
        raise RuntimeError("nginx found its free ports taken three times")

    def _spawn(self, config: Path) -> bool:
        """Start nginx on ``config``; False if it could not bind its ports (raises on any other failure)."""
        error_log = self.folder / "error.log"
        command = [str(self.binary), "-p", str(self.folder), "-c", str(config), "-e", str(error_log)]
        with open(self.folder / "nginx.out", "ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while not all(self._listens(port) for port in (self.https_port, self.http_port)):
            if self.process.poll() is not None:
                said = error_log.read_text() if error_log.exists() else ""
                said += (self.folder / "nginx.out").read_text()
                self.process = None
                if "Address already in use" in said:
                    return False
                raise RuntimeError(f"nginx exited: {said[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"nginx did not listen on {self.https_port} and {self.http_port} within 30 s")
            time.sleep(0.05)
        return True

    @staticmethod
    def _listens(port: int) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    def stop(self) -> None:
        """Stop nginx (its fast shutdown; SIGKILL to its process group if it lingers). The folder is kept."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def __enter__(self) -> HttpsServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def https_server() -> Iterator[HttpsServer]:
    """The session's nginx over HTTPS and plain HTTP on 127.0.0.1, serving a fresh temporary root (tests write under
    a folder of their own). Missing nginx or openssl: a skip, or a failure under
    ``CONTENT_SELECTION_REQUIRE_STORES=1``."""
    server = HttpsServer()
    try:
        server.start()
    except RuntimeError as exc:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)
        if os.environ.get("CONTENT_SELECTION_REQUIRE_STORES") == "1":
            raise
        pytest.skip(f"no HTTPS server here: {exc}")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)
