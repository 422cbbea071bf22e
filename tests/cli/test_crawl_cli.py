"""``content-selection crawl`` as a user runs it on one machine: refusals before anything runs, and a crawl of a
folder on local worker processes (the cluster's runs are in ``tests/system/test_crawl_cluster.py``)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.support import DATA
from tests.support.faultkit import run_command, stderr_lines

CRAWL = DATA / "crawl"
PATHS = CRAWL / "crawl-data" / "CC-MAIN-2024-18" / "warc.paths.gz"


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ([str(PATHS)], 65, "line 1 ('crawl-data/CC-MAIN-2024-18/segments/"),
        ([str(PATHS), "--base", str(CRAWL), "--workers", "2", "--dask-address", "tcp://127.0.0.1:1"], 2, "--workers"),
        ([str(PATHS), "--base", str(CRAWL), "--dask-address", "localhost"], 2, "is not a Dask scheduler address"),
        ([str(CRAWL / "nothing.gz")], 65, "no such file or folder"),
    ],
)
def test_refused_in_one_line_before_anything_runs(tmp_path: Path, args: list[str], status: int, message: str) -> None:
    out = tmp_path / "out"
    done = run_command(["crawl", *args, "-o", str(out)], tmp_path, {"PREFECT_HOME": str(tmp_path / "home")})
    assert done.returncode == status, done.stderr
    (line,) = stderr_lines(done.stderr)
    assert line.startswith("content-selection: error: ") and message in line
    assert not out.exists() and not (tmp_path / "home").exists()  # Prefect never started


@pytest.mark.slow
def test_a_folder_of_warcs_on_local_processes_bad_one_named_others_done(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["crawl", str(CRAWL), "-o", str(out), "--workers", "2", "--time-limit", "30"]
    done = run_command(args, tmp_path, {"PREFECT_HOME": str(tmp_path / "home")}, timeout=600)
    assert done.returncode == 65, done.stderr
    lines = stderr_lines(done.stderr)
    assert lines[0] == (
        f"content-selection: {CRAWL / 'bad' / 'not-a-warc.warc.gz'}: not a WARC file (it does not start with a "
        "WARC/1.x record); give a .warc or .warc.gz file, a folder of pages or a manifest"
    )
    assert lines[1].startswith("content-selection: error: 1 of 5 WARCs failed") and len(lines) == 2
    summary = orjson.loads((out / "crawl.json").read_bytes())
    assert summary["totals"] | {"seconds": 0} == {
        "warcs": 5, "done": 4, "failed": 1, "pending": 0, "done_before": 0, "retried": 0, "pages": 24, "articles": 24,
        "errors": summary["totals"]["errors"], "seconds": 0,
    }  # fmt: skip
    outputs = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jsonl"))
    assert outputs == sorted(w["output"] for w in summary["warcs"] if w["state"] == "done")
    assert not list(out.rglob("*.tmp*"))
