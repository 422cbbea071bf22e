"""A real Redis server on 127.0.0.1 for the tests on a real Prefect server, and the settings that put Prefect's
production stack on it.

Prefect's guide to scaling a self-hosted server ("How to scale self-hosted Prefect") runs the server's messaging
broker and cache, its causal ordering of events and its concurrency lease storage on Redis (``prefect-redis``);
:func:`prefect_redis_settings` is that configuration. One Redis per test session (the ``redis_server`` fixture):
Debian's ``redis-server`` (or ``$CONTENT_SELECTION_REDIS_BIN``) on a free port, its data in a temporary folder
with the append-only file on, as a production Redis keeps what it holds across a restart. It is used when
``CONTENT_SELECTION_REDIS=1`` (then a missing ``redis-server`` is a failure, as in CI); otherwise the fixture gives
None and the real server keeps Prefect's in-memory defaults.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.prefect_fixtures import free_port

START_SECONDS = 30


def prefect_redis_settings(host: str, port: int) -> dict[str, str]:
    """The settings of a Prefect server (API servers and background services alike) on the Redis at ``host:port``,
    as Prefect's self-hosted guide gives them: messaging and its cache, causal ordering and lease storage in
    database 0, the background services' coordination (Docket) in database 1."""
    return {
        "PREFECT_SERVER_EVENTS_MESSAGING_BROKER": "prefect_redis.messaging",
        "PREFECT_SERVER_EVENTS_MESSAGING_CACHE": "prefect_redis.messaging",
        "PREFECT_SERVER_EVENTS_CAUSAL_ORDERING": "prefect_redis.ordering",
        "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect_redis.lease_storage",
        "PREFECT_REDIS_MESSAGING_HOST": host,
        "PREFECT_REDIS_MESSAGING_PORT": str(port),
        "PREFECT_REDIS_MESSAGING_DB": "0",
        "PREFECT_SERVER_DOCKET_URL": f"redis://{host}:{port}/1",
    }


def redis_binary() -> str | None:
    """``redis-server``: the setting, else the one on PATH (Debian's package)."""
    return os.environ.get("CONTENT_SELECTION_REDIS_BIN") or shutil.which("redis-server")


def redis_command(binary: str, host: str, port: int, folder: Path) -> list[str]:
    """``redis-server`` on ``host:port`` with its data in ``folder``, the append-only file on: what it held is there
    again after a restart."""
    return [
        binary,
        "--bind", host,
        "--port", str(port),
        "--dir", str(folder),
        "--appendonly", "yes",
        "--save", "",
        "--protected-mode", "no",
    ]  # fmt: skip


class RedisServer:
    """A ``redis-server`` on 127.0.0.1, its data in ``folder``; :meth:`kill_and_restart` as a machine's death would."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary, self.folder, self.port = binary, folder, free_port()
        self.host = "127.0.0.1"
        self.process = self._start()

    @property
    def settings(self) -> dict[str, str]:
        return prefect_redis_settings(self.host, self.port)

    def _start(self) -> subprocess.Popen[bytes]:
        command = redis_command(self.binary, self.host, self.port, self.folder)
        log = open(self.folder / "redis.log", "ab")  # noqa: SIM115 - the server's output for its life
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_SECONDS
        while not self.answers():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"redis-server did not start: {(self.folder / 'redis.log').read_text()[-2000:]}")
            time.sleep(0.1)
        return process

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(host=self.host, port=self.port, socket_timeout=2).ping())
        except redis.RedisError:
            return False

    def kill_and_restart(self, down_seconds: float = 0.0) -> None:
        """SIGKILL the server, leave it down ``down_seconds``, start it again on the same data and port."""
        self.kill()
        time.sleep(down_seconds)
        self.process = self._start()

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer | None]:
    """The session's Redis, or None where ``CONTENT_SELECTION_REDIS=1`` is not set."""
    if os.environ.get("CONTENT_SELECTION_REDIS") != "1":
        yield None
        return
    binary = redis_binary()
    if binary is None:
        pytest.fail("CONTENT_SELECTION_REDIS=1 asks for Redis, but redis-server was not found (apt-get install redis)")
    folder = Path(tempfile.mkdtemp(prefix="content-selection-redis-"))
    server = RedisServer(binary, folder)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
