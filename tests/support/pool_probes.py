"""Module-level functions for the extraction pool's tests (imported by the worker processes)."""

from __future__ import annotations

import os
import signal
import time


def report_pid(html: str, url: str | None) -> tuple[str, str | None]:
    """An "extractor" whose text is the pid of the worker that ran it."""
    return str(os.getpid()), None


def failing_initializer() -> None:
    """A worker initializer that cannot get ready."""
    raise OSError("injected: the worker cannot get ready")


def sleep_briefly(html: str, url: str | None) -> tuple[str, str | None]:
    """An "extractor" that takes 0.4 s."""
    time.sleep(0.4)
    return "slept", None


def crash_on_marker(html: str, url: str | None) -> tuple[str, str | None]:
    """An "extractor" whose worker dies (SIGSEGV) on a page that says ``crash``, and that reports its pid otherwise."""
    if "crash" in html:
        os.kill(os.getpid(), signal.SIGSEGV)
    return str(os.getpid()), None


def run_and_keep_workers() -> None:
    """In a child process: one run that keeps its workers, then return (the process must still exit)."""
    from selection_extraction.extractors import WORKER_PRELOAD
    from selection_extraction.pool import PageJob, run_jobs

    jobs = [PageJob(0, "<html></html>", None, ["probe"])]
    run_jobs(
        jobs,
        {"probe": report_pid},
        lambda *_: None,
        workers=1,
        time_limit=30.0,
        preload=WORKER_PRELOAD,
        keep_workers=True,
    )


def fork_a_child_that_keeps_workers() -> None:
    """In a child process that imported the pool before it forks (as a fork server that preloaded it does): the
    grandchild keeps its workers and must still exit; exits 0 when it did, 1 when it hung."""
    import multiprocessing

    import selection_extraction.pool  # noqa: F401 - imported before the fork, as a fork server's preload is

    grandchild = multiprocessing.get_context("fork").Process(target=run_and_keep_workers)
    grandchild.start()
    grandchild.join(60)
    if grandchild.is_alive():
        grandchild.kill()
        grandchild.join()
        raise SystemExit(1)
    raise SystemExit(grandchild.exitcode)


def wait_to_be_killed(html: str, url: str | None) -> tuple[str, str | None]:
    """An "extractor" whose page is the path of a marker file: the first call writes its worker's pid there and
    waits (up to 60 s) to be killed from outside; a call that finds the marker written returns ``survived``."""
    if os.path.exists(html):
        return "survived", None
    with open(html + ".tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.replace(html + ".tmp", html)
    time.sleep(60)
    return "never killed", None
