"""``content-selection run --task-runner dask`` on a local cluster, as a user runs it: the same bytes as
``select``, and a terminal without Dask's own start-up and shut-down lines (about 35 of them, and now and then
a ``CommClosedError`` traceback logged while a clean shutdown closes a connection). Dask's warnings still show."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.faultkit import run_command

SAMPLE = ROOT / "examples" / "sample_extracted.json"


@pytest.mark.slow
def test_a_run_on_a_local_dask_cluster_prints_no_traceback_and_no_cluster_chatter(tmp_path: Path) -> None:
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home")}
    expected, out = tmp_path / "select.json", tmp_path / "run.json"
    assert run_command(["select", str(SAMPLE), "-o", str(expected)], tmp_path, env).returncode == 0
    args = ["run", str(SAMPLE), "-o", str(out), "--task-runner", "dask", "--chunk-size", "3"]
    done = run_command(args, tmp_path, env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == expected.read_bytes()
    assert "Traceback" not in done.stderr
    dask_lines = [line for line in done.stderr.splitlines() if "| INFO    | distributed." in line]
    assert dask_lines == [], done.stderr
