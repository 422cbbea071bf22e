"""A WARC done in committed pieces: a worker killed in the middle costs the pages after its last commit, and the
WARC taken up again writes the bytes of a run in one go; commits that no longer match are not used; a worker with
another fingerprint, or a WARC that keeps killing its workers, fails alone."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selection_core.errors import WriteError
from selection_crawl import commits, unit
from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_crawl.job import CrawlJob
from selection_crawl.unit import MAX_DEATHS, crawl_warc
from tests.support import ROOT
from tests.support.crawls import write_crawl
from tests.support.faultkit import child_env

pytestmark = pytest.mark.slow  # real extractors on real pages

PAGES = 40
EVERY = 5  # pages between two commits in these tests


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One WARC of 40 real pages: the folder and the WARC's key."""
    folder = tmp_path_factory.mktemp("crawl")
    (key,) = write_crawl(folder, 1, PAGES)
    return folder, key


@pytest.fixture(scope="module")
def clean(crawl: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The WARC done in one go (one piece): its output's and its record's bytes by name."""
    folder, key = crawl
    out = tmp_path_factory.mktemp("clean")
    job = _plan(folder / key, out)
    assert crawl_warc(job.warc_job(0)).state == "done"
    return {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}


def _plan(warc: Path, out: Path) -> CrawlJob:
    """The job of the folder of ``warc`` (its only WARC) into ``out``."""
    return CrawlJob.plan(str(warc.parent), str(out), None, 30.0)


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}


def _extracted_pages(mocker) -> list[int]:  # noqa: ANN001 - pytest-mock's fixture
    """The pages each extraction run of this process does (a spy: the real extraction runs)."""
    counts: list[int] = []
    real = unit.extract_readings

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        stats = real(*args, **kwargs)
        counts.append(stats.pages)
        return stats

    mocker.patch.object(unit, "extract_readings", counting)
    return counts


def test_a_worker_killed_mid_warc_is_taken_up_from_its_last_commit_with_the_bytes_of_a_clean_run(
    crawl: tuple[Path, str], clean: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mocker
) -> None:
    folder, key = crawl
    out = tmp_path / "out"
    script = (
        "from selection_crawl.job import CrawlJob\nfrom selection_crawl.unit import crawl_warc\n"
        "if __name__ == '__main__':\n"
        f"    crawl_warc(CrawlJob.plan({str((folder / key).parent)!r}, {str(out)!r}, None, 30.0).warc_job(0))\n"
    )
    env = child_env() | {COMMIT_PAGES_VARIABLE: str(EVERY)}
    worker = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while len(list(out.rglob("*.commit"))) < 2:  # killed once two pieces are committed
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    committed = len(list(out.rglob("*.commit")))
    assert not any(name.endswith((".jsonl", ".extraction.json")) for name in _files(out))  # no output yet

    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, str(EVERY))
    extracted = _extracted_pages(mocker)
    job = _plan(folder / key, out)
    assert job.todo == [0]
    outcome = crawl_warc(job.warc_job(0))
    assert outcome.state == "done" and outcome.from_commits >= committed * EVERY and outcome.from_commits % EVERY == 0
    assert sum(extracted) == PAGES - outcome.from_commits  # only the pages after the last commit were extracted again
    assert _files(out) == clean  # the output and its record: the bytes of a clean run; no commit left


def test_commits_of_another_version_of_the_warc_are_not_used(
    crawl: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mocker
) -> None:
    folder, key = crawl
    warc = tmp_path / "in" / "one.warc.gz"
    warc.parent.mkdir()
    warc.write_bytes((folder / key).read_bytes())
    out = tmp_path / "out"
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, str(EVERY))
    job = _plan(warc, out)
    mocker.patch.object(unit, "write_output", side_effect=WriteError("disk full (injected)"))
    failed = crawl_warc(job.warc_job(0))
    assert failed.state == "failed" and "disk full (injected)" in str(failed.reason)
    assert len(list(out.rglob("*.commit"))) == PAGES // EVERY  # kept for the next run
    mocker.stopall()

    os.utime(warc, (1, 1))  # another version of the WARC (its modification time is in its version's tag)
    extracted = _extracted_pages(mocker)
    outcome = crawl_warc(_plan(warc, out).warc_job(0))
    assert outcome.state == "done" and outcome.from_commits == 0 and sum(extracted) == PAGES
    mocker.stopall()
    assert crawl_warc(_plan(warc, tmp_path / "ref").warc_job(0)).state == "done"
    assert _files(out) == _files(tmp_path / "ref")  # the output and the record only, as a clean run's


def test_a_worker_with_another_fingerprint_fails_the_warc_alone_and_says_why(crawl: tuple[Path, str], tmp_path) -> None:
    folder, key = crawl
    job = _plan(folder / key, tmp_path / "out")
    outcome = crawl_warc(dataclasses.replace(job.warc_job(0), fingerprint="0" * 64))
    assert (outcome.state, outcome.exit_code) == ("failed", 74)
    assert outcome.reason == (
        f"{folder / key}: this worker's extractors, lxml or selection rule differ from the coordinator's "
        f"(fingerprint {job.fingerprint[:12]}, not 000000000000); run the workers on the coordinator's image"
    )
    assert not (tmp_path / "out" / key).parent.exists() or not _files(tmp_path / "out")  # nothing written


def test_the_selection_rule_is_in_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    import selection_core.config as rule

    before = unit.expected_fingerprint(30.0)
    monkeypatch.setattr(rule, "SHINGLE_SIZE", rule.SHINGLE_SIZE + 1)
    assert unit.expected_fingerprint(30.0) != before
    monkeypatch.undo()
    monkeypatch.setattr(unit.importlib.metadata, "version", lambda name: "99.0")
    assert unit.expected_fingerprint(30.0) != before


def test_the_parquet_writers_version_is_in_a_datasets_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    batch, dataset = unit.expected_fingerprint(30.0, "batch"), unit.expected_fingerprint(30.0, "dataset")
    real = unit.library_version
    monkeypatch.setattr(unit, "library_version", lambda name: "0.0" if name == "pyarrow" else real(name))
    assert unit.expected_fingerprint(30.0, "dataset") != dataset  # pyarrow writes its version into the footer
    assert unit.expected_fingerprint(30.0, "batch") == batch


def test_a_warc_that_keeps_killing_its_workers_fails_alone_after_the_most_deaths(
    crawl: tuple[Path, str], tmp_path: Path
) -> None:
    folder, key = crawl
    out = tmp_path / "out"
    job = _plan(folder / key, out)
    warc_job = job.warc_job(0)
    tries = commits.Tries(Path(warc_job.output), warc_job.run)
    for _ in range(MAX_DEATHS):  # tried, then its worker died before its next commit, MAX_DEATHS times
        tries.start(0)
    outcome = crawl_warc(warc_job)
    assert (outcome.state, outcome.tries) == ("failed", MAX_DEATHS)
    assert outcome.reason == (
        f"{folder / key}: its workers died {MAX_DEATHS} times in a row before its next commit; it fails alone "
        "(run again to try again)"
    )
    # a re-run is another run: it tries again
    assert crawl_warc(_plan(folder / key, out).warc_job(0)).state == "done"


def test_a_try_that_finds_a_new_commit_counts_the_deaths_in_a_row_again(tmp_path: Path) -> None:
    tries = commits.Tries(tmp_path / "x.jsonl", "run")
    assert [tries.start(0) for _ in range(3)] == [(1, 0), (2, 1), (3, 2)]
    assert tries.start(1) == (4, 0) and tries.start(1) == (5, 1)  # (tries, deaths in a row before a new commit)
    assert commits.Tries(tmp_path / "x.jsonl", "a re-run").start(1) == (1, 0)


def _done_with_leftovers(warc: Path, out: Path) -> list[Path]:
    """The WARC done into ``out``, then a commit and the count of starts written beside its output, as a worker
    killed between its record and its clean-up leaves them: those two files."""
    job = _plan(warc, out)
    assert crawl_warc(job.warc_job(0)).state == "done"
    output = Path(job.warc_job(0).output)
    left = [output.with_name(output.name + ".00000.commit"), output.with_name(output.name + ".tries")]
    for path in left:
        path.write_bytes(b"left by a worker killed between the record and the clean-up")
    return left


def test_what_a_worker_killed_after_the_record_left_is_removed_by_the_next_plan(
    crawl: tuple[Path, str], tmp_path: Path
) -> None:
    folder, key = crawl
    out = tmp_path / "out"
    left = _done_with_leftovers(folder / key, out)
    again = _plan(folder / key, out)
    assert again.todo == [] and again.done_before == 1
    assert not any(path.exists() for path in left)


def test_a_warc_sent_again_once_done_writes_nothing(crawl: tuple[Path, str], tmp_path: Path) -> None:
    folder, key = crawl
    job = _plan(folder / key, tmp_path / "out")
    first = crawl_warc(job.warc_job(0))
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*") if p.is_file()}
    again = crawl_warc(job.warc_job(0))  # a stale task of a killed run, or a task Dask ran twice
    assert again.state == "done" and again.sha256 == first.sha256
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "out").rglob("*") if p.is_file()} == stamps


def test_a_warc_sent_again_once_done_removes_what_a_worker_killed_after_the_record_left(
    crawl: tuple[Path, str], clean: dict[str, bytes], tmp_path: Path
) -> None:
    folder, key = crawl
    out = tmp_path / "out"
    _done_with_leftovers(folder / key, out)  # its worker was killed before the clean-up, so Dask sends it again
    assert crawl_warc(_plan(folder / key, out).warc_job(0)).state == "done"
    assert _files(out) == clean  # nothing left, nothing written again


def _failed_with_commits(warc: Path, out: Path, every: int, monkeypatch: pytest.MonkeyPatch, mocker) -> list[Path]:
    """The WARC done with a commit every ``every`` pages, its output never written: the commits it keeps."""
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, str(every))
    mocker.patch.object(unit, "write_output", side_effect=WriteError("disk full (injected)"))
    assert crawl_warc(_plan(warc, out).warc_job(0)).state == "failed"
    mocker.stopall()
    return sorted(out.rglob("*.commit"))


def test_the_commits_of_two_workers_cut_at_other_pages_never_chain(
    crawl: tuple[Path, str], clean: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mocker
) -> None:
    """A stale task of a killed run and the re-run's do one WARC at once; a piece can be cut by time, so their
    commits number other pages: a third start takes up one worker's chain only, and writes a clean run's bytes."""
    folder, key = crawl
    by_fives = _failed_with_commits(folder / key, tmp_path / "fives", 5, monkeypatch, mocker)
    by_threes = _failed_with_commits(folder / key, tmp_path / "threes", 3, monkeypatch, mocker)
    assert len(by_fives) == PAGES // 5 and len(by_threes) == -(-PAGES // 3)
    out = tmp_path / "out"
    mixed = [by_threes[0], *by_fives[1:]]  # the re-run's first piece (3 pages), then the stale task's (from page 5)
    for path in mixed:
        target = out / Path(*path.relative_to(tmp_path).parts[1:])  # the same name under ``out``
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "7")
    extracted = _extracted_pages(mocker)
    outcome = crawl_warc(_plan(folder / key, out).warc_job(0))
    assert outcome.state == "done" and outcome.from_commits == 3 and sum(extracted) == PAGES - 3
    assert _files(out) == clean
