"""A WARC in a process of its own (:mod:`selection_crawl.process`), watched by a thread: the same bytes as a WARC done
here; a WARC whose process is stopped (SIGSTOP) is killed and named once nothing moved for the stall bound; an
extractor process stopped (SIGSTOP) never hangs it; extractor processes killed (SIGKILL) change no byte; a stop
asked keeps the commits; a WARC whose watcher dies ends with it; a WARC whose crawl's lease was taken over writes
nothing more. Real extractors on real pages, real processes and signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from selection_crawl import process
from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_crawl.job import CrawlJob
from selection_crawl.lease import CrawlLease
from selection_crawl.process import WarcProcessDied, crawl_warc_in_process
from selection_crawl.unit import crawl_warc
from selection_extraction.own_process import OwnProcessStopped
from selection_storage.stores import location
from selection_storage.stores.conditional import conditional
from tests.support import ROOT
from tests.support.cluster import group_exists
from tests.support.crawls import write_crawl
from tests.support.faultkit import child_env

pytestmark = pytest.mark.slow  # real extractors on real pages

PAGES = 30
#: Bounded waits (a loaded two-core machine): never a timing assertion, a guard against a hang.
WAIT_SECONDS = 120


@pytest.fixture(scope="module")
def warc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("crawl")
    (key,) = write_crawl(folder, 1, PAGES)
    return folder / key


def _job(warc: Path, out: Path, time_limit: float = 30.0) -> CrawlJob:
    return CrawlJob.plan(str(warc.parent), str(out), None, time_limit)


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}


def _warc_processes(parent: psutil.Process | None = None) -> list[psutil.Process]:
    """The processes of their own this test process (or ``parent``) started (a WARC each)."""
    found = []
    for child in (parent or psutil.Process()).children():
        try:
            if "selection_extraction.own_process" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:  # ended meanwhile (an extractor's fork server, a finished WARC)
            continue
    return found


def _wait_for(condition, what: str):  # noqa: ANN001, ANN202 - a predicate, and what it returns
    deadline = time.monotonic() + WAIT_SECONDS
    while not (found := condition()):
        assert time.monotonic() < deadline, f"waited {WAIT_SECONDS} s for {what}"
        time.sleep(0.05)
    return found


class _Watched(threading.Thread):
    """``crawl_warc_in_process`` in a thread: its outcome or its exception, and the reports it got."""

    def __init__(self, job, stopping=None) -> None:  # noqa: ANN001
        super().__init__(daemon=True)
        self.job, self.stopping = job, stopping
        self.reports: list[tuple[int, int]] = []
        self.outcome = self.error = None

    def run(self) -> None:
        try:
            self.outcome = crawl_warc_in_process(self.job, lambda *r: self.reports.append(r), self.stopping)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            self.error = exc


def test_a_warc_in_its_own_process_writes_the_bytes_of_one_done_here_and_leaves_no_process(
    warc: Path, tmp_path: Path
) -> None:
    here = _job(warc, tmp_path / "here")
    assert crawl_warc(here.warc_job(0)).state == "done"
    job = _job(warc, tmp_path / "own")
    watched = _Watched(job.warc_job(0))
    watched.start()
    leader = _wait_for(_warc_processes, "the WARC's process")[0].pid
    watched.join(WAIT_SECONDS)
    assert watched.error is None and watched.outcome.state == "done" and watched.outcome.pages == PAGES
    assert watched.reports and all(0 < done <= estimate for done, estimate in watched.reports)
    assert _files(tmp_path / "own") == _files(tmp_path / "here")
    _wait_for(lambda: not group_exists(leader), "the WARC's group to end")  # with its extractor processes


def test_a_warc_whose_process_is_stopped_is_killed_and_named_once_nothing_moved_for_the_bound(
    warc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "STALL_MARGIN_SECONDS", 5.0)  # with a 5 s time limit: 20 s without a page
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "5")
    job = _job(warc, tmp_path / "out", time_limit=5.0)
    watched = _Watched(job.warc_job(0))
    watched.start()
    _wait_for(lambda: list((tmp_path / "out").rglob("*.commit")), "a commit")
    (child,) = _warc_processes()
    leader = child.pid
    os.kill(leader, signal.SIGSTOP)
    stopped_at = time.monotonic()
    watched.join(WAIT_SECONDS)
    assert isinstance(watched.error, WarcProcessDied), watched.error
    message = str(watched.error)
    assert message.startswith(f"{warc}: nothing moved for 20 s; its process was killed"), message
    assert message.endswith("it is sent again from its last commit")
    print(f"\nstalled WARC killed {time.monotonic() - stopped_at:.1f} s after its process was stopped (bound 20 s)")
    _wait_for(lambda: not group_exists(leader), "the WARC's group to end")
    assert list((tmp_path / "out").rglob("*.commit"))  # kept: the WARC is taken up there


def test_an_extractor_process_stopped_never_hangs_the_warc(
    warc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped while it runs a page, pebble kills it at the time limit (a TimeoutError for that page) and the WARC
    goes on; stopped between two pages, it never takes the next (pebble counts no time limit for a call not
    started) and the watchdog kills the WARC, named, to be sent again: either way, no hang."""
    monkeypatch.setattr(process, "STALL_MARGIN_SECONDS", 5.0)
    job = _job(warc, tmp_path / "out", time_limit=5.0)
    watched = _Watched(job.warc_job(0))
    watched.start()
    (child,) = _wait_for(_warc_processes, "the WARC's process")
    # an extractor process: a child of the fork server, itself a child of the WARC's process
    extractors = _wait_for(lambda: [p for p in child.children(recursive=True) if p.ppid() != child.pid], "extractors")
    os.kill(extractors[0].pid, signal.SIGSTOP)
    watched.join(WAIT_SECONDS)
    assert not watched.is_alive()
    if watched.error is None:
        assert watched.outcome.state == "done" and watched.outcome.pages == PAGES
        assert sum(watched.outcome.errors.values()) >= 1  # the page it held: TimeoutError for that extractor
        print("\nthe stopped extractor was killed at the time limit; the WARC went on")
    else:
        assert isinstance(watched.error, WarcProcessDied), watched.error
        assert str(watched.error).startswith(f"{warc}: nothing moved for 20 s")
        print("\nthe stopped extractor hung the WARC's next page; the watchdog killed the WARC")
    _wait_for(lambda: not group_exists(child.pid), "the WARC's group to end")


def test_extractor_processes_killed_from_outside_leave_the_bytes_of_a_clean_run(
    warc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the kernel's OOM killer does to the biggest process: the WARC's extractor processes SIGKILLed while it
    runs. Each call a killed process held is run again in a fresh one, so no page records the death."""
    here = _job(warc, tmp_path / "here")
    assert crawl_warc(here.warc_job(0)).state == "done"
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "5")  # pieces of 5 pages: the kills fall in different pieces
    out = tmp_path / "killed"
    watched = _Watched(_job(warc, out).warc_job(0))
    watched.start()
    (child,) = _wait_for(_warc_processes, "the WARC's process")
    killed: list[int] = []
    commits = -1
    while watched.is_alive() and len(killed) < 2:
        time.sleep(0.05)
        # The second kill waits for two commits after the count taken before the first: the piece that held the
        # call run again after the first kill has ended (even if a commit came between the count and the kill), so
        # no call dies twice (a second death is that call's error, by design).
        if killed and len(list(out.rglob("*.commit"))) <= commits + 1:
            continue
        try:  # an extractor process: a child of the fork server, itself a child of the WARC's process
            extractors = [p for p in child.children(recursive=True) if p.ppid() != child.pid and p.pid not in killed]
        except psutil.Error:  # the WARC ended meanwhile
            break
        if extractors:
            commits = len(list(out.rglob("*.commit")))
            os.kill(extractors[0].pid, signal.SIGKILL)
            killed.append(extractors[0].pid)
    watched.join(WAIT_SECONDS)
    assert len(killed) == 2, "the WARC ended before two of its extractor processes could be killed"
    assert watched.error is None and watched.outcome.state == "done" and watched.outcome.pages == PAGES
    assert _files(out) == _files(tmp_path / "here")


def test_a_stop_asked_stops_the_warc_where_it_is_and_keeps_its_commits(warc: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "5")
    out = tmp_path / "out"
    stop = threading.Event()
    watched = _Watched(_job(warc, out).warc_job(0), stop.is_set)
    watched.start()
    _wait_for(lambda: list(out.rglob("*.commit")), "a commit")
    leader = _warc_processes()[0].pid
    stop.set()
    watched.join(WAIT_SECONDS)
    assert isinstance(watched.error, OwnProcessStopped), watched.error
    _wait_for(lambda: not group_exists(leader), "the WARC's group to end")
    names = sorted(p.name for p in out.rglob("*") if p.is_file())
    assert names and all(name.endswith(".commit") for name in names), names  # no output, no try, no temporary


def test_a_warc_whose_watcher_is_killed_ends_with_it(warc: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = (
        "from selection_crawl.job import CrawlJob; from selection_crawl.process import crawl_warc_in_process;"
        f"crawl_warc_in_process(CrawlJob.plan({str(warc.parent)!r}, {str(out)!r}, None, 30.0).warc_job(0))"
    )
    env = child_env() | {COMMIT_PAGES_VARIABLE: "5"}
    watcher = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, start_new_session=True)
    try:
        _wait_for(lambda: list(out.rglob("*.commit")), "a commit")
        (child,) = _wait_for(lambda: _warc_processes(psutil.Process(watcher.pid)), "the WARC's process")
        leader = child.pid
        watcher.kill()  # as a Dask worker's process, or a coordinator, dies
        watcher.wait(WAIT_SECONDS)
        _wait_for(lambda: not group_exists(leader), "the WARC's group to end")
    finally:
        if watcher.poll() is None:
            os.killpg(watcher.pid, signal.SIGKILL)
    assert not list(out.rglob("*.jsonl"))  # it ended where it was: no output


def _take_over(lease: CrawlLease) -> None:
    """Another run takes the lease over, as a run does: a conditional replace of the version read."""
    where = conditional(location(lease.fence[0]))
    current = where.read_tagged()
    assert current is not None and where.replace_if(b'{"token": "another run"}', current.tag) is not None


def test_a_worker_whose_crawls_lease_was_taken_over_writes_nothing(warc: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    lease = CrawlLease.acquire(out, None)
    job = _job(warc, out)
    job.fence = lease.fence
    _take_over(lease)
    outcome = crawl_warc(job.warc_job(0))
    assert outcome.state == "failed" and "the crawl's lease was taken over" in outcome.reason
    names = sorted(p.name for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
    assert names == ["crawl.lease"]  # no try, commit or output


def test_a_warcs_process_stops_within_seconds_of_a_takeover_and_writes_nothing_after(
    warc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "2")
    out = tmp_path / "out"
    lease = CrawlLease.acquire(out, None)
    job = _job(warc, out)
    job.fence = lease.fence
    watched = _Watched(job.warc_job(0))
    watched.start()
    _wait_for(lambda: list(out.rglob("*.commit")), "a commit")
    _take_over(lease)
    taken = time.monotonic()
    before = {p.name for p in out.rglob("*.commit")}
    watched.join(WAIT_SECONDS)
    if watched.error is None:  # its next write asked first
        assert watched.outcome.state == "failed" and "the crawl's lease was taken over" in watched.outcome.reason
    else:  # its watch of the lease asked first, and stopped it where it was
        assert isinstance(watched.error, WarcProcessDied), watched.error
    print(f"\nthe WARC's process stopped {time.monotonic() - taken:.1f} s after the takeover")
    after = {p.name for p in out.rglob("*.commit")}
    assert len(after - before) <= 1  # at most the one whose check passed just before the takeover
    assert not list(out.rglob("*.jsonl")) and not list(out.rglob("*.extraction.json"))
