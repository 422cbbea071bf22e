"""A real PostgreSQL server on 127.0.0.1 for the tests on a real Prefect server (production Prefect runs on one).

One cluster per test session (the ``postgres_url`` fixture), made by ``initdb`` in a temporary folder and
started by ``pg_ctl`` on a free port, trust authentication on loopback only, stopped and removed at the end.
PostgreSQL refuses to run as root: as root (CI) its programs run as the ``postgres`` user (``runuser``).
The binaries are Debian's ``postgresql`` package or ``$CONTENT_SELECTION_POSTGRES_BIN``. It is used when
``CONTENT_SELECTION_POSTGRES=1`` (then a missing PostgreSQL is a failure); otherwise the fixture gives None and
the real server keeps SQLite (what PostgreSQL costs the suite: docs/prefect.md, "Tests").
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.support.prefect_fixtures import free_port

#: The role and database Prefect uses (the cluster's superuser, trusted on loopback).
ROLE = "prefect"
DATABASE = "postgres"


def postgres_bin() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: the setting, else the newest Debian cluster version, else PATH."""
    candidates = [os.environ.get("CONTENT_SELECTION_POSTGRES_BIN", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))[::-1]
    on_path = shutil.which("initdb")
    candidates.append(str(Path(on_path).resolve().parent) if on_path else "")
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _as_owner(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@contextmanager
def postgres_cluster() -> Iterator[str]:
    """``postgresql+asyncpg://...`` of a new, empty cluster on loopback, stopped and removed when the block ends
    (``RuntimeError`` where PostgreSQL is missing or does not start)."""
    folder = postgres_bin()
    if folder is None:
        raise RuntimeError(
            "PostgreSQL was not found: apt-get install postgresql, or set CONTENT_SELECTION_POSTGRES_BIN"
        )
    data = Path(tempfile.mkdtemp(prefix="content-selection-postgres-"))  # /tmp: reachable by the postgres user
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    port = free_port()
    log = data / "server.log"
    run = {"check": True, "capture_output": True, "text": True, "timeout": 120}
    try:
        subprocess.run(_as_owner([str(folder / "initdb"), "-D", str(data / "db"), "-U", ROLE, "--auth=trust"]), **run)
        options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
        start = [str(folder / "pg_ctl"), "-D", str(data / "db"), "-l", str(log), "-o", options, "-w", "start"]
        subprocess.run(_as_owner(start), **run)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(data, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr or exc.stdout}") from None
    try:
        yield f"postgresql+asyncpg://{ROLE}@127.0.0.1:{port}/{DATABASE}"
    finally:
        subprocess.run(_as_owner([str(folder / "pg_ctl"), "-D", str(data / "db"), "-m", "fast", "stop"]), **run)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str | None]:
    """The session's cluster (:func:`postgres_cluster`), or None unless ``CONTENT_SELECTION_POSTGRES=1``."""
    if os.environ.get("CONTENT_SELECTION_POSTGRES") != "1":
        yield None
        return
    with ExitStack() as stack:
        try:
            url = stack.enter_context(postgres_cluster())
        except RuntimeError as exc:
            pytest.fail(f"CONTENT_SELECTION_POSTGRES=1 asks for PostgreSQL: {exc}")
        yield url
