"""``content-selection crawl`` as a user runs it on one machine: refusals before anything runs, and a crawl of a
folder on local worker processes (the cluster's runs are in ``tests/system/test_crawl_cluster.py``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import orjson
import psutil
import pytest

from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_crawl.job import CrawlJob
from selection_crawl.lease import CrawlLease
from selection_crawl.unit import crawl_warc
from tests.support import DATA
from tests.support.crawls import write_crawl
from tests.support.faultkit import run_command, start_command, stderr_lines

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
def test_a_folder_of_warcs_on_local_processes_bad_one_named_others_done(
    tmp_path: Path, session_api: dict[str, str]
) -> None:
    out = tmp_path / "out"
    args = ["crawl", str(CRAWL), "-o", str(out), "--workers", "2", "--time-limit", "30"]
    done = run_command(args, tmp_path, {"PREFECT_HOME": str(tmp_path / "home"), **session_api}, timeout=600)
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


@pytest.mark.slow
def test_a_second_crawl_on_the_same_prefix_is_refused_naming_the_first_before_prefect_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with CrawlLease.acquire(str(out), None, "the-first-run"):
        args = ["crawl", str(PATHS), "--base", str(CRAWL), "-o", str(out)]
        done = run_command(args, tmp_path, {"PREFECT_HOME": str(tmp_path / "home")})
    assert done.returncode == 75, done.stderr
    (line,) = stderr_lines(done.stderr)
    assert line.startswith(
        f"content-selection: error: {out}: another crawl is running on this prefix (host {socket.gethostname()}, "
        f"process {os.getpid()}, flow run the-first-run, since "
    )
    assert line.endswith("); wait for it to end, or stop it")
    assert not (tmp_path / "home").exists() and not (out / "crawl.json").exists()  # nothing ran


def _warc_processes(command: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The WARC processes of a ``crawl`` command on local workers that started extractors."""
    found = []
    for child in psutil.Process(command.pid).children():
        try:
            if "selection_extraction.own_process" in " ".join(child.cmdline()) and child.children():
                found.append(child)
        except psutil.Error:  # ended meanwhile
            continue
    return found


@pytest.mark.slow
def test_a_local_worker_killed_mid_warc_is_replaced_and_only_its_warc_is_taken_up_from_its_last_commit(
    tmp_path: Path, session_api: dict[str, str]
) -> None:
    keys = write_crawl(tmp_path / "crawl", 3, 30)
    listing = tmp_path / "crawl" / "crawl-data" / "CC-MAIN-2024-18" / "warc.paths.gz"
    reference = CrawlJob.plan(str(listing), str(tmp_path / "ref"), str(tmp_path / "crawl"), 30.0)
    for index in reference.todo:
        assert crawl_warc(reference.warc_job(index)).state == "done"
    out = tmp_path / "out"
    args = ["crawl", str(listing), "--base", str(tmp_path / "crawl"), "-o", str(out), "--workers", "2",
            "--time-limit", "30"]  # fmt: skip
    env = {"PREFECT_HOME": str(tmp_path / "home"), COMMIT_PAGES_VARIABLE: "5", **session_api}
    log = tmp_path / "crawl.log"
    command = start_command(args, tmp_path, env, log, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while len({p.name.split(".")[0] for p in out.rglob("*.commit")}) < 2 or list(out.rglob("*.jsonl")):
            assert command.poll() is None and time.monotonic() < deadline, log.read_text()  # two WARCs mid-way
            time.sleep(0.05)
        victim = _warc_processes(command)[0]
        for process in [victim, *victim.children(recursive=True)]:
            process.kill()  # the WARC's process and its extractors, as the kernel's OOM killer or a lost machine would
        assert command.wait(timeout=300) == 0, log.read_text()
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
    for warc in reference.warcs:
        assert (out / warc.relative).read_bytes() == (tmp_path / "ref" / warc.relative).read_bytes()
    summary = orjson.loads((out / "crawl.json").read_bytes())
    assert summary["totals"]["done"] == len(keys) == 3 and summary["totals"]["failed"] == 0
    (taken_up,) = [w for w in summary["warcs"] if w.get("tries", 1) > 1]  # the dead worker's WARC alone
    assert taken_up["tries"] == 2 and taken_up["from_commits"] >= 5 and taken_up["from_commits"] % 5 == 0
    assert not list(out.rglob("*.commit")) and not list(out.rglob("*.tries")) and not list(out.rglob("*.tmp*"))
