"""The extraction pool: per-call time limits, kept and recycled workers, workers that cannot get ready.

Everything runs real worker processes (forkserver); the "extractors" are the
small module-level functions of ``tests/support/pool_probes.py``, except where the
real libraries are named, so that a test shows which process ran a call. The faults
inside a real extraction (a hang in C code, a crash, the network) are in
``test_extract_faults.py``.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

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


def run(
    n_pages: int, *, keep: bool, functions: dict | None = None, html: str = "<html></html>", **options
) -> tuple[list[str], object]:
    """Run the probe on ``n_pages`` one-worker jobs; the text of each call (the probe's pid), in page order."""
    texts: dict[int, str] = {}

    def on_outcome(index: int, name: str, outcome: Outcome) -> None:
        assert outcome.error is None, outcome.error
        texts[index] = outcome.text

    jobs = (PageJob(i, html, None, ["probe"]) for i in range(n_pages))
    # the real preload: the fork server is shared by the whole test session, and its first start fixes it
    options.setdefault("preload", WORKER_PRELOAD)
    options.setdefault("time_limit", 30.0)
    stats = run_jobs(jobs, functions or PROBE, on_outcome, workers=1, keep_workers=keep, **options)
    return [texts[i] for i in range(n_pages)], stats


def run_each(jobs: list[PageJob], functions: dict) -> tuple[dict[tuple[int, str], Outcome], object]:
    """Run ``jobs`` on one worker; each call's outcome by (page, extractor), and the run's stats."""
    outcomes: dict[tuple[int, str], Outcome] = {}
    stats = run_jobs(
        jobs,
        functions,
        lambda index, name, outcome: outcomes.setdefault((index, name), outcome),
        workers=1,
        time_limit=30.0,
        preload=WORKER_PRELOAD,
    )
    return outcomes, stats


def test_the_time_limit_runs_from_the_start_of_each_call() -> None:
    """Calls waiting for a worker are not timed: 3 calls of 0.4 s one after the other, 1 s each."""
    texts, stats = run(3, keep=False, functions={"probe": pool_probes.sleep_briefly}, time_limit=1.0)
    assert texts == ["slept"] * 3
    assert (stats.timeouts, stats.crashes) == (0, 0)


def test_a_call_that_kills_its_worker_twice_fails_alone_and_its_worker_is_replaced() -> None:
    jobs = [PageJob(i, html, None, ["crashy", "probe"]) for i, html in enumerate(["fine", "crash", "fine"])]
    functions = {"crashy": pool_probes.crash_on_marker, "probe": pool_probes.report_pid}
    outcomes, stats = run_each(jobs, functions)
    assert outcomes[1, "crashy"] == Outcome(
        "", None, "WorkerCrashedError: the worker process running crashy died (killed by signal 11 (SIGSEGV))"
    )
    others = [outcomes[key] for key in sorted(outcomes) if key != (1, "crashy")]
    assert all(o.error is None for o in others) and len(others) == 5
    assert others[0].text != others[-1].text  # the crashed worker was replaced
    assert (stats.crashes, stats.timeouts) == (1, 0)


def test_a_worker_killed_from_outside_runs_its_call_again_in_a_fresh_process(tmp_path: Path) -> None:
    """What the kernel's OOM killer does: one SIGKILL of the worker in the middle of a call. The call is run again
    in a new worker and gives what a run without the kill gives; only a second death would be its error (above)."""
    marker = tmp_path / "pid"
    killed: list[int] = []

    def kill_the_worker() -> None:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        killed.append(int(marker.read_text()))
        os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    jobs = [PageJob(0, "fine", None, ["probe"]), PageJob(1, str(marker), None, ["killable", "probe"])]
    functions = {"killable": pool_probes.wait_to_be_killed, "probe": pool_probes.report_pid}
    outcomes, stats = run_each(jobs, functions)
    killer.join()
    assert outcomes[1, "killable"] == Outcome("survived", None, None)
    assert all(outcome.error is None for outcome in outcomes.values()) and len(outcomes) == 3
    assert killed and outcomes[1, "probe"].text != str(killed[0])  # the probe ran in the new worker
    assert (stats.crashes, stats.timeouts) == (0, 0)


def test_a_kept_worker_serves_the_next_run() -> None:
    first, _ = run(3, keep=True)
    second, _ = run(2, keep=True)
    assert len(set(first)) == 1
    assert set(second) == set(first)
    assert stop_kept_workers() == 1


def test_without_keep_every_run_starts_its_own_worker() -> None:
    first, _ = run(2, keep=False)
    second, _ = run(2, keep=False)
    assert set(first).isdisjoint(second)
    assert stop_kept_workers() == 0


def test_a_worker_is_replaced_after_recycle_after_pages_counted_across_kept_runs() -> None:
    first, _ = run(3, keep=True, recycle_after=2)
    second, _ = run(2, keep=True, recycle_after=2)
    assert first[0] == first[1] != first[2]
    assert first[2] == second[0] != second[1]


def _exits_by_itself(target: Callable[[], None], seconds: float) -> bool:
    """Whether a new process running ``target`` exits, with status 0, within ``seconds`` (killed if not)."""
    child = multiprocessing.get_context("spawn").Process(target=target)
    child.start()
    child.join(seconds)
    if child.is_alive():
        child.kill()
        child.join()
        return False
    return child.exitcode == 0


def test_a_process_that_kept_workers_still_exits() -> None:
    """A task runner's worker process (a multiprocessing child) that kept a pool exits when it is done."""
    assert _exits_by_itself(pool_probes.run_and_keep_workers, 60)


def test_a_process_forked_after_the_pool_was_imported_still_exits() -> None:
    """A fork server's worker inherits the module from the server's preload, and must stop its own kept pool."""
    assert _exits_by_itself(pool_probes.fork_a_child_that_keeps_workers, 120)


def test_kept_workers_serve_only_runs_with_the_same_functions() -> None:
    first, _ = run(1, keep=True)
    other = {"probe": FunctionRef("tests.support.pool_probes", "report_pid")}
    second, _ = run(1, keep=True, functions=other)
    assert first != second
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
    # pages larger than a pipe's buffer: calls are still on their way to the pool when it is replaced
    second, _ = run(4, keep=True, html="<html>" + "x" * 300_000)
    assert second[0] != first[0]
    assert len(set(second)) == 1


def test_a_kept_pool_that_pebble_gave_up_is_replaced_when_the_next_run_schedules_on_it() -> None:
    from selection_extraction import pool as pool_module

    first, _ = run(1, keep=True)
    (kept,) = [pool for pools in pool_module._idle.values() for pool in pools]
    os.kill(int(first[0]), signal.SIGKILL)  # idle: no call of its own fails, pebble gives the whole pool up
    deadline = time.monotonic() + 30
    while kept.active:
        assert time.monotonic() < deadline, "pebble did not notice its worker's death"
        time.sleep(0.05)
    second, stats = run(3, keep=True)
    assert second[0] != first[0] and len(set(second)) == 1
    assert stats.crashes == 0


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
            keep_workers=True,
        )
    assert calls == []
    assert stop_kept_workers() == 0


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
