"""``selection_cli.environment``: the settings the command line reads from the environment."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from selection_cli.environment import PURE_ENV, apply_kernel_setting, prepare_embedded_api, release_large_buffers
from selection_core import kernel
from selection_core.errors import EXIT_UNAVAILABLE
from tests.support import ROOT
from tests.support.faultkit import run_command, stderr_lines

BUILT = importlib.util.find_spec("selection_core._kernel") is not None


@pytest.fixture
def restore_kernel() -> Iterator[None]:
    was = kernel.KERNEL
    yield
    kernel.KERNEL = was


@pytest.mark.skipif(not BUILT, reason="the compiled kernel is not built")
@pytest.mark.parametrize(
    ("value", "used"),
    [
        pytest.param(None, True, id="unset"),
        pytest.param("", True, id="empty"),
        pytest.param("0", True, id="zero"),
        pytest.param("1", False, id="one"),
        pytest.param("yes", False, id="other"),
    ],
)
@pytest.mark.usefixtures("restore_kernel")
def test_pure_switch(monkeypatch: pytest.MonkeyPatch, value: str | None, used: bool) -> None:
    if value is None:
        monkeypatch.delenv(PURE_ENV, raising=False)
    else:
        monkeypatch.setenv(PURE_ENV, value)
    apply_kernel_setting()
    assert (kernel.KERNEL is not None) is used


def test_large_buffers_are_unmapped_when_freed_on_glibc() -> None:
    import platform

    assert release_large_buffers() is (platform.libc_ver()[0] == "glibc")


def test_embedded_api_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"DO_NOT_TRACK": "kept"}
    monkeypatch.setattr(os, "environ", env)
    prepare_embedded_api()
    assert env == {
        "DO_NOT_TRACK": "kept",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }


@pytest.fixture
def closed_api_url() -> Iterator[str]:
    """The API URL of a port bound by this test and never listening: a connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/api"


@pytest.mark.parametrize(
    ("argv", "fix"),
    [
        pytest.param(["run", "{batch}"], "unset PREFECT_API_URL to use the embedded API", id="run"),
        pytest.param(["pipeline", "{pages}"], "unset PREFECT_API_URL to use the embedded API", id="pipeline"),
        pytest.param(["serve", "--data-root", "{tmp}"], "point PREFECT_API_URL at a running one", id="serve"),
        pytest.param(["automations"], "point PREFECT_API_URL at a running one", id="automations"),
    ],
)
def test_an_unreachable_prefect_api_is_one_line_and_exit_69(
    tmp_path: Path, closed_api_url: str, argv: list[str], fix: str
) -> None:
    batch = tmp_path / "b_extracted.json"
    shutil.copyfile(ROOT / "examples" / "sample_extracted.json", batch)
    pages = tmp_path / "pages"
    shutil.copytree(ROOT / "tests" / "data" / "pages", pages)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    args = [a.format(batch=batch, pages=pages, tmp=tmp_path) for a in argv]
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": closed_api_url}
    done = run_command(args, tmp_path, env)
    lines = stderr_lines(done.stderr)
    assert (done.returncode, len(lines)) == (EXIT_UNAVAILABLE, 1), done.stderr
    assert lines[0].startswith("content-selection: error: the Prefect API at " + closed_api_url), lines[0]
    assert "cannot be reached" in lines[0] and "prefect server start" in lines[0] and fix in lines[0], lines[0]
    assert done.stdout == ""
    after = sorted(
        p.relative_to(tmp_path) for p in tmp_path.rglob("*") if not p.is_relative_to(tmp_path / "prefect-home")
    )
    assert after == before, "something was written"
