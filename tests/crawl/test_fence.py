"""A run that lost its prefix changes nothing there, even when frozen between a check of its lease and a write: every
write of ``crawl.json`` replaces only the version the run last read or wrote; a WARC's output and record are written
only over the version found before its fence was checked; the sweep aborts only the uploads started while the run
held the lease. On a disk and on moto's S3 server; the other run's moves are made in the window the fault opens.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from pytest_mock import MockerFixture

import selection_crawl.commits as commits
import selection_crawl.unit as unit
from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_crawl.job import CrawlJob
from selection_crawl.lease import CrawlLease, CrawlLeaseLostError
from selection_crawl.listing import SUMMARY_NAME
from selection_crawl.unit import WarcOutcome, crawl_warc
from selection_extraction import stop_kept_workers
from selection_storage.stores import location, store
from selection_storage.stores.conditional import conditional
from tests.support.crawls import write_crawl
from tests.support.faultkit import start_command
from tests.support.faultproxy import FaultProxy
from tests.support.object_stores import StoreServer, running


@pytest.fixture(autouse=True, scope="module")
def _stop_workers():
    yield
    stop_kept_workers()


@pytest.fixture(scope="module")
def warcs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("crawl")
    write_crawl(folder, 2, 4)
    return folder


@pytest.fixture(params=["disk", "s3"])
def prefix(request: pytest.FixtureRequest, tmp_path: Path, store_servers: dict[str, StoreServer]) -> str:
    if request.param == "disk":
        return str(tmp_path / "selected")
    server = running(store_servers, request.param)
    return server.url(server.new_bucket(), "selected")


def _listing(warcs: Path) -> str:
    return str(next(p for p in warcs.rglob("*") if p.is_dir() and any(p.glob("*.warc.gz"))))


def _snapshot(prefix: str) -> dict[str, str]:
    """Every file under the prefix (hidden ones aside) and the SHA-256 of its bytes."""
    found = {}
    for entry in store(location(prefix, None, "output")).files():
        with store(entry.where).open() as fh:
            found[entry.relative] = hashlib.sha256(fh.read()).hexdigest()
    return found


def _take_over(lease: CrawlLease) -> None:
    """Another run takes the lease over, as a run does: a conditional replace of the version read."""
    where = conditional(location(lease.fence[0], None, "output"))
    current = where.read_tagged()
    assert current is not None and where.replace_if(b'{"token": "another run"}', current.tag) is not None


def test_crawl_json_is_never_written_over_the_next_runs(warcs: Path, prefix: str) -> None:
    """Run A planned (and wrote), then froze; run B planned and wrote: A's late writes, of the summary as a WARC
    ends and of its close, are refused, and crawl.json is B's."""
    listing = _listing(warcs)
    a = CrawlJob.plan(listing, prefix)
    a.write_summary()
    b = CrawlJob.plan(listing, prefix)
    b.finish_warc(0, WarcOutcome.failed("x: B's own line", 65))
    b.close()
    written = _snapshot(prefix)
    with pytest.raises(CrawlLeaseLostError, match=r"crawl\.json: another run has written it since this one last did"):
        a.write_summary()
    with pytest.raises(CrawlLeaseLostError):
        a.close()
    assert _snapshot(prefix) == written


def test_a_first_crawl_json_is_not_written_over_one_another_run_wrote_first(warcs: Path, prefix: str) -> None:
    listing = _listing(warcs)
    a, b = CrawlJob.plan(listing, prefix), CrawlJob.plan(listing, prefix)  # neither found a crawl.json
    b.write_summary()
    written = _snapshot(prefix)
    with pytest.raises(CrawlLeaseLostError):
        a.write_summary()
    assert _snapshot(prefix) == written and SUMMARY_NAME in written


@pytest.mark.slow  # real extractors
@pytest.mark.parametrize("moment", ["output", "record"])
def test_a_warcs_process_frozen_between_its_fence_and_its_write_publishes_nothing(
    warcs: Path, prefix: str, moment: str, mocker: MockerFixture
) -> None:
    """The fault: just after the WARC's process checked its fence and before its write of the output (or of the
    record), another run takes the lease over and writes that file. The late write is refused, the file keeps the
    other run's bytes, and the WARC fails as its lease is lost."""
    lease = CrawlLease.acquire(prefix, None)
    job = CrawlJob.plan(_listing(warcs), prefix)
    job.fence = lease.fence
    target = job.where(job.warcs[0].relative)
    where = target if moment == "output" else unit.record_of(target)
    theirs = b'{"written by": "the run that took the prefix over"}\n'
    real_write = unit.write_output if moment == "output" else unit.write_if
    frozen = []

    def frozen_then_continued(*args: object, **kwargs: object) -> object:
        if not frozen:  # the other run's moves, while this process is frozen
            frozen.append(True)
            _take_over(lease)
            conditional(where).create_exclusive(theirs)
        return real_write(*args, **kwargs)

    mocker.patch.object(unit, "write_output" if moment == "output" else "write_if", frozen_then_continued)
    outcome = crawl_warc(job.warc_job(0))
    assert frozen and outcome.state == "failed"
    assert outcome.reason is not None and "the crawl's lease was taken over" in outcome.reason
    with store(where).open() as fh:
        assert fh.read() == theirs
    lease.release()


@pytest.mark.parametrize("write", ["output", "record"])
def test_a_warc_done_twice_by_one_run_writes_over_its_other_tries_write(
    warcs: Path, tmp_path: Path, write: str, mocker: MockerFixture
) -> None:
    """Another try of the same run (a WARC sent twice) wrote the file between this one's look and its write: the
    refused write is tried again over it, after the fence is checked again, and the WARC is done."""
    lease = CrawlLease.acquire(tmp_path / "out", None)
    job = CrawlJob.plan(_listing(warcs), str(tmp_path / "out"))
    job.fence = lease.fence
    clean = crawl_warc(job.warc_job(0))
    target = job.where(job.warcs[0].relative)
    where = Path(target if write == "output" else unit.record_of(target))
    done = where.read_bytes()
    where.unlink()
    real_write: Callable[..., object] = unit.write_output if write == "output" else unit.write_if
    raced = []

    def raced_by_the_other_try(*args: object, **kwargs: object) -> object:
        if not raced:
            raced.append(True)
            where.write_bytes(done)  # the other try's write: the same bytes
        return real_write(*args, **kwargs)

    mocker.patch.object(unit, "write_output" if write == "output" else "write_if", raced_by_the_other_try)
    outcome = crawl_warc(job.warc_job(0))
    assert raced and outcome.state == "done" and outcome.sha256 == clean.sha256
    assert where.read_bytes() == done
    lease.release()


@pytest.mark.slow  # Azurite: moto's S3 server dates every multipart upload 2010-11-10, S3 itself the real time
def test_the_sweep_aborts_only_uploads_started_while_the_run_held_the_lease(
    warcs: Path, store_servers: dict[str, StoreServer]
) -> None:
    """A run frozen before its sweep, continued after another run started an upload under the prefix: that one is
    kept; its own killed writer's is aborted."""
    server = running(store_servers, "az")
    bucket = server.new_bucket()
    prefix = server.url(bucket, "selected")
    lease = CrawlLease.acquire(prefix, None)
    job = CrawlJob.plan(_listing(warcs), prefix)
    job.finish_warc(0, WarcOutcome.failed("0: failed", 74))
    ours = job.where(job.warcs[0].relative)
    theirs = unit.record_of(ours)  # (not crawl.json: a blob's commit drops its uncommitted blocks)

    def start_upload(where: object) -> None:  # a writer killed after it sent a part: never committed
        staged = store(where).stage()  # type: ignore[arg-type]
        staged.write(b"part of an output\n")
        staged.finish()

    start_upload(ours)  # a killed writer of this run's
    time.sleep(1.5)  # the store's times are whole seconds apart
    held_at = lease.held_at()
    assert held_at is not None
    time.sleep(1.5)
    start_upload(theirs)  # the next run's, while this one was frozen
    job.close(held_at)
    assert [key for key, _ in server.uploads(bucket)] == [str(theirs).removeprefix(f"az://{bucket}/")]
    lease.release()


def test_a_plan_removes_a_done_warcs_leftovers_only_once_its_lease_is_checked_and_as_listed(
    warcs: Path, tmp_path: Path
) -> None:
    """A done WARC's leftover work file (its worker killed as it ended) is removed by the next plan, after the
    lease is checked (``held``); one another run rewrote meanwhile, or any once the lease is lost, stays."""
    out = tmp_path / "out"
    job = CrawlJob.plan(_listing(warcs), str(out))
    job.finish_warc(0, crawl_warc(job.warc_job(0)))
    job.close()
    leftover = Path(job.where(job.warcs[0].relative + ".00000.commit"))

    def rewritten() -> None:  # another run's write, between the plan's listing and its removal
        leftover.write_bytes(b"another run's commit")

    def lost() -> None:
        raise CrawlLeaseLostError("the lease was taken over")

    leftover.write_bytes(b"a killed worker's commit")
    with pytest.raises(CrawlLeaseLostError):
        CrawlJob.plan(_listing(warcs), str(out), held=lost)
    assert leftover.read_bytes() == b"a killed worker's commit"
    time.sleep(0.01)  # a new modification time
    assert CrawlJob.plan(_listing(warcs), str(out), held=rewritten).todo == []
    assert leftover.read_bytes() == b"another run's commit"
    CrawlJob.plan(_listing(warcs), str(out), held=lambda: None)
    assert not leftover.exists()


def test_a_warcs_process_removes_its_work_files_only_as_it_listed_them(
    warcs: Path, tmp_path: Path, mocker: MockerFixture
) -> None:
    """Frozen between its listing of a work file and its removal, a WARC's process finds that another run wrote it
    since: the file stays, with the other run's bytes."""
    job = CrawlJob.plan(_listing(warcs), str(tmp_path / "out"))
    real = commits.remove_if
    rewritten: list[Path] = []

    def another_run_first(where: object, version: object) -> bool:
        path = Path(str(where))
        if path.name.endswith(".tries"):
            path.write_bytes(b"another run's count of tries")
            rewritten.append(path)
        return real(where, version)  # type: ignore[arg-type]

    mocker.patch.object(commits, "remove_if", another_run_first)
    assert crawl_warc(job.warc_job(0)).state == "done"
    (tries,) = rewritten
    assert tries.read_bytes() == b"another run's count of tries"


# --- the command, frozen (SIGSTOP) at a moment, then continued once the next run has ended ---------------------

#: Pages of each of the two WARCs of a frozen crawl, and the pages of each commit.
FROZEN_PAGES, FROZEN_EVERY = 12, 3

#: Bounded waits (a loaded two-core machine): a guard against a hang, never a timing assertion.
WAIT_SECONDS = 900


def _tree(prefix: str) -> dict[str, str]:
    """Every file under the prefix, hidden ones too on a disk (a staged file left, a lock), and its bytes' SHA-256."""
    if "://" in prefix:
        return _snapshot(prefix)
    root = Path(prefix)
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def _command(listing: Path, prefix: str, env: dict[str, str], log: Path, *extra: str) -> subprocess.Popen[bytes]:
    args = ["crawl", str(listing), "-o", prefix, "--workers", "1", *extra]
    return start_command(args, log.parent, env, log, start_new_session=True)


def _ended(command: subprocess.Popen[bytes]) -> int:
    try:
        return command.wait(timeout=WAIT_SECONDS)
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
            command.wait()


@pytest.mark.slow  # two crawls, and the 2 minutes a frozen run's lease takes to go stale
@pytest.mark.parametrize("moment", ["in its second write of crawl.json (S3)", "after a commit (a disk)"])
def test_a_crawl_frozen_then_continued_changes_nothing_once_the_next_run_has_ended(
    moment: str, tmp_path: Path, store_servers: dict[str, StoreServer], session_api: dict[str, str]
) -> None:
    """Crawl A (the command, its WARC's process and extractors) is SIGSTOPped: while its request writing crawl.json
    is in flight (a proxy holds it, then lets the store evaluate it), or once a WARC has a commit. Crawl B waits
    for A's lease to go stale, takes the prefix over and ends. A, continued, ends with exit 75, and every file
    under the prefix has B's bytes: A wrote, removed and left nothing."""
    keys = write_crawl(tmp_path / "warcs", 2, FROZEN_PAGES)
    listing = tmp_path / "warcs.txt"
    listing.write_text("".join(f"{tmp_path / 'warcs' / key}\n" for key in keys))
    on_s3 = "S3" in moment
    server = running(store_servers, "s3") if on_s3 else None
    prefix = server.url(server.new_bucket(), "selected") if server else str(tmp_path / "selected")
    env = {COMMIT_PAGES_VARIABLE: str(FROZEN_EVERY), **session_api}  # the store's settings are this session's
    with FaultProxy(server.endpoint if server else "http://127.0.0.1:9") as proxy:
        puts: list[str] = []
        if on_s3:
            summary = f"/{prefix.removeprefix('s3://')}/{SUMMARY_NAME}"
            proxy.hold(lambda method, path: method == "PUT" and path.split("?")[0] == summary and
                       (puts.append(path) or len(puts) == 2))  # fmt: skip
        a_env = (
            env | {"PREFECT_HOME": str(tmp_path / "home-a")} | ({"AWS_ENDPOINT_URL": proxy.endpoint} if on_s3 else {})
        )
        a = _command(listing, prefix, a_env, tmp_path / "a.log")
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while not (proxy.held.is_set() if on_s3 else list(Path(prefix).rglob("*.commit"))):
                assert a.poll() is None and time.monotonic() < deadline, (tmp_path / "a.log").read_text()
                time.sleep(0.02)
            os.killpg(a.pid, signal.SIGSTOP)
            stopped = time.monotonic()
            b = _command(listing, prefix, env | {"PREFECT_HOME": str(tmp_path / "home-b")}, tmp_path / "b.log",
                         "--wait", "600")  # fmt: skip
            assert _ended(b) == 0, (tmp_path / "b.log").read_text()
            took_over = time.monotonic() - stopped
            theirs = _tree(prefix)
        finally:
            proxy.release.set()
            os.killpg(a.pid, signal.SIGCONT)
        code = _ended(a)
    lines = (tmp_path / "a.log").read_text().splitlines()
    print(f"\nfrozen {moment}: B took over and ended {took_over:.0f} s after; A continued: exit {code}, {lines[-1:]}")
    assert code == 75, "\n".join(lines)
    assert _tree(prefix) == theirs  # nothing written, removed or left by A after B ended
    summary = orjson.loads(_read(prefix, SUMMARY_NAME))
    assert summary["totals"]["done"] == 2 and summary["run"] != "", summary["totals"]
    if on_s3:
        deadline = time.monotonic() + WAIT_SECONDS  # forwarded as soon as released: a guard against a hang
        while proxy.held_status is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proxy.held_status == 412  # the store refused A's write of crawl.json: B's version is there


def _read(prefix: str, name: str) -> bytes:
    with store(location(f"{prefix}/{name}", None, "output")).open() as fh:
        return fh.read()
