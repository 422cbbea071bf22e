"""The extraction pool's workers: kept between runs, and refused when they cannot get ready.

Everything runs real worker processes (forkserver); the "extractors" are the
small module-level functions of ``tests/support/pool_probes.py``, except where the
real libraries are named, so that a test shows which process ran a call.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Iterator

import pytest

from selection_extraction import (
    ExtractionSettings,
    ExtractorsUnavailableError,
    default_extractors,
    extract_pages,
    find_pages,
)
from selection_extraction.extractors import WORKER_PRELOAD
from selection_extraction.pool import (
    FunctionRef,
    Outcome,
    PageJob,
    WorkerSetupError,
    run_jobs,
    stop_kept_workers,
)
from tests.support import PAGES, pool_probes

PROBE = {"probe": pool_probes.report_pid}


@pytest.fixture(autouse=True)
def no_kept_workers() -> Iterator[None]:
    """Every test starts and ends with no kept worker in this process."""
    stop_kept_workers()
    yield
    stop_kept_workers()


def run(n_pages: int, *, keep: bool, functions: dict | None = None, **options) -> tuple[list[str], object]:
    """Run the probe on ``n_pages`` one-worker jobs; the pid of the worker of each call, in page order."""
    texts: dict[int, str] = {}

    def on_outcome(index: int, name: str, outcome: Outcome) -> None:
        assert outcome.error is None, outcome.error
        texts[index] = outcome.text

    jobs = (PageJob(i, "<html></html>", None, ["probe"]) for i in range(n_pages))
    # the real preload: the fork server is shared by the whole test session, and its first start fixes it
    options.setdefault("preload", WORKER_PRELOAD)
    stats = run_jobs(jobs, functions or PROBE, on_outcome, workers=1, time_limit=30.0, keep_workers=keep, **options)
    return [texts[i] for i in range(n_pages)], stats


def test_a_kept_worker_serves_the_next_run() -> None:
    first, stats1 = run(3, keep=True)
    second, stats2 = run(2, keep=True)
    assert len(set(first)) == 1
    assert set(second) == set(first)
    assert (stats1.workers_started, stats1.workers_reused) == (1, 0)
    assert (stats2.workers_started, stats2.workers_reused) == (0, 1)
    assert stop_kept_workers() == 1


def test_without_keep_every_run_starts_its_own_worker() -> None:
    first, _ = run(2, keep=False)
    second, stats = run(2, keep=False)
    assert set(first).isdisjoint(second)
    assert (stats.workers_started, stats.workers_reused) == (1, 0)
    assert stop_kept_workers() == 0


def test_a_worker_due_for_recycling_is_not_kept() -> None:
    first, _ = run(2, keep=True, recycle_after=2)
    second, stats = run(1, keep=True, recycle_after=2)
    assert set(first).isdisjoint(second)
    assert stats.workers_reused == 0


def test_kept_workers_serve_only_runs_with_the_same_functions() -> None:
    first, _ = run(1, keep=True)
    other = {"probe": FunctionRef("tests.support.pool_probes", "report_pid")}
    second, stats = run(1, keep=True, functions=other)
    assert first != second
    assert stats.workers_reused == 0
    assert stop_kept_workers() == 2


def test_a_kept_worker_that_died_while_idle_is_replaced() -> None:
    first, _ = run(1, keep=True)
    pid = int(first[0])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30  # the fork server, its parent, reaps it
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    second, stats = run(1, keep=True)
    assert second != first
    assert (stats.workers_started, stats.workers_reused) == (1, 0)


def test_a_failing_initializer_stops_the_run_with_one_error() -> None:
    calls: list[int] = []
    jobs = [PageJob(i, "<html></html>", None, ["probe"]) for i in range(5)]
    with pytest.raises(WorkerSetupError, match="OSError: injected: the worker cannot get ready"):
        run_jobs(
            jobs,
            PROBE,
            lambda index, name, outcome: calls.append(index),
            workers=2,
            time_limit=30.0,
            initializer=pool_probes.failing_initializer,
            preload=WORKER_PRELOAD,
        )
    assert calls == []


def test_an_unresolvable_reference_stops_the_run() -> None:
    functions = {"probe": FunctionRef("no_such_module_for_content_selection", "extract")}
    with pytest.raises(
        WorkerSetupError, match="ModuleNotFoundError: No module named 'no_such_module_for_content_selection'"
    ):
        run(1, keep=True, functions=functions)
    assert stop_kept_workers() == 0


def test_extract_pages_reports_a_broken_library_as_unavailable() -> None:
    broken = tuple(
        dataclasses.replace(e, function=FunctionRef("no_such_module_for_content_selection", "extract"))
        if e.name == "readability"
        else e
        for e in default_extractors()
    )
    with pytest.raises(ExtractorsUnavailableError) as caught:
        extract_pages(find_pages(PAGES / "manifest.jsonl"), ExtractionSettings(workers=1), broken)
    message = str(caught.value)
    assert "no_such_module_for_content_selection" in message
    assert "pip install 'content-selection[extract]'" in message
    assert caught.value.exit_code == 1


def test_kept_workers_give_the_same_batch_as_fresh_ones() -> None:
    page_set = find_pages(PAGES / "manifest.jsonl")
    fresh = extract_pages(page_set, ExtractionSettings(workers=1))
    kept_first = extract_pages(page_set, ExtractionSettings(workers=1, keep_workers=True))
    kept_again = extract_pages(page_set, ExtractionSettings(workers=1, keep_workers=True))
    assert kept_first.doc == fresh.doc
    assert kept_again.doc == fresh.doc
    assert stop_kept_workers() == 1
