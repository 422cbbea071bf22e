"""A real ``prefect server start`` on 127.0.0.1 for the tests that need one, and the helpers to drive it.

One server per test session (the ``server`` fixture, registered in ``tests/conftest.py``), on SQLite, or on
PostgreSQL as production servers are (``CONTENT_SELECTION_POSTGRES=1``, ``tests/support/postgres.py``), with its
messaging, causal ordering and lease storage on Redis as Prefect's guide to production sets them
(``CONTENT_SELECTION_REDIS=1``, ``tests/support/redis.py``): it costs 10-15 s to start, so every server test
module shares it. It runs in its own session with a temporary ``PREFECT_HOME``, its UI off and telemetry off;
everything that talks to it (``content-selection serve``, workers, flows) runs in subprocesses given
``Server.env``. Every wait is bounded; no assertion depends on how long anything took.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.support import ROOT
from tests.support.prefect_fixtures import free_port
from tests.support.redis import RedisServer

SERVER_START_SECONDS = 120
SERVE_START_SECONDS = 90
RUN_SECONDS = 150
STOP_SECONDS = 30

T = TypeVar("T")


def wait_until(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.5) -> T:
    """Call ``probe`` until it returns something truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(interval)


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start a subprocess in its own session (so it and its children can be stopped together)."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, SIGKILL if it is still there after ``STOP_SECONDS``."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_SECONDS)


def run(args: list[str], env: dict[str, str], timeout: float = RUN_SECONDS) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


class Server:
    """A running server, the environment to reach it, and a synchronous client."""

    def __init__(
        self,
        api_url: str,
        env: dict[str, str],
        logs: Path,
        started: Callable[[], subprocess.Popen[bytes]],
        redis: RedisServer | None,
    ) -> None:
        self.api_url = api_url
        self.env = env
        self.logs = logs
        self.redis = redis
        self._started = started
        self.process = started()

    def kill_and_restart(self) -> None:
        """SIGKILL the server's process group, as a machine's death would, then start it again on the same data and
        port; returns once it answers."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = self._started()

    @contextmanager
    def client(self) -> Iterator[Any]:
        from prefect import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: self.api_url}):
            with get_client(sync_client=True) as client:
                yield client

    def deployment(self, name: str) -> Any | None:
        from prefect.exceptions import ObjectNotFound

        with self.client() as client:
            try:
                return client.read_deployment_by_name(name)
            except ObjectNotFound:
                return None

    def flow_runs(self, deployment_name: str) -> list[Any]:
        from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

        deployment = self.deployment(deployment_name)
        if deployment is None:
            return []
        with self.client() as client:
            return client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
            )

    def final_run(self, deployment_name: str, input_path: str, timeout: float = RUN_SECONDS) -> Any:
        """The run of ``deployment_name`` on ``input_path``, once it has reached a final state."""

        def probe() -> Any | None:
            for flow_run in self.flow_runs(deployment_name):
                if flow_run.parameters.get("input_path") == input_path and flow_run.state and flow_run.state.is_final():
                    return flow_run
            return None

        return wait_until(f"a final run of {deployment_name} on {input_path}", probe, timeout)

    def automations(self) -> list[Any]:
        with self.client() as client:
            return client.read_automations()


@contextmanager
def running_server(
    home: Path, logs: Path, port: int, database_url: str | None, redis: RedisServer | None = None
) -> Iterator[Server]:
    """A ``prefect server start`` on ``port`` with its data in ``home`` (or ``database_url``), on ``redis`` if
    given, until the block ends."""
    api_url = f"http://127.0.0.1:{port}/api"
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    base.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_UI_ENABLED="false",
        # A run queued behind a concurrency limit asks for a slot again after this long (30 s by default).
        PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS="2",
        PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    if redis is not None:
        base.update(redis.settings)
    if database_url is not None:
        base["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = database_url
    log = logs / "server.log"  # a server started again on the same home goes on writing it
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]

    def started() -> subprocess.Popen[bytes]:
        process = start(command, base, log)

        def healthy() -> bool:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                return httpx.get(f"{api_url}/health", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        try:
            wait_until("the Prefect server to answer /api/health", healthy, SERVER_START_SECONDS)
        except BaseException:
            stop(process)
            raise
        return process

    env = {
        **base,
        "PREFECT_API_URL": api_url,
        "PREFECT_RUNNER_POLL_FREQUENCY": "1",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
    }
    running = Server(api_url, env, logs, started, redis)
    try:
        yield running
    finally:
        stop(running.process)


@pytest.fixture(scope="session")
def server(
    tmp_path_factory: pytest.TempPathFactory, postgres_url: str | None, redis_server: RedisServer | None
) -> Iterator[Server]:
    """The session's server, on PostgreSQL (:mod:`tests.support.postgres`) when asked, else SQLite, and on Redis
    (:mod:`tests.support.redis`) when asked."""
    home, logs = tmp_path_factory.mktemp("prefect-home"), tmp_path_factory.mktemp("logs")
    with running_server(home, logs, free_port(), postgres_url, redis_server) as session_server:
        yield session_server
