"""One WARC in a process of its own (:mod:`selection_extraction.own_process`), watched by the thread of the worker
that started it: a Dask worker's thread, or a thread of the local coordinator.

So a worker's process-wide state is never touched (a Dask worker runs several WARCs at once in one daemonic
process), a stalled WARC (:data:`STALL_MARGIN_SECONDS`) is killed and sent again from its last commit, a stop
reaches every process of a WARC, and a WARC's processes never outlive the worker that started them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Final

from selection_core.batch import ProgressCallback
from selection_crawl.lease import CrawlLeaseLostError
from selection_crawl.unit import PROGRESS_SECONDS, PROGRESS_TOPIC, WarcJob, WarcOutcome, crawl_warc, fenced
from selection_extraction.own_process import OwnProcessDied, run_in_own_process

#: Seconds without a page done or a piece written, beyond three time limits (a page's three extractors, in turn),
#: after which a WARC is taken as stalled.
STALL_MARGIN_SECONDS: Final[float] = 120.0

#: Seconds between two checks of the crawl's lease by a WARC's process, beside those before each write.
FENCE_SECONDS: Final[float] = 5.0


class WarcProcessDied(Exception):
    """A WARC's process ended without an outcome, or was killed as stalled; the message names the WARC. The crawl
    sends the WARC again."""


def _crawl_fenced(job: WarcJob, report: ProgressCallback) -> WarcOutcome:
    """:func:`crawl_warc`, in the WARC's process, stopped within :data:`FENCE_SECONDS` of its crawl's lease being
    taken over (SIGTERM to itself: where it is, as a stop), whatever it was doing."""
    if job.fence is not None:
        threading.Thread(target=_watch_fence, args=(job,), name="content-selection-fence", daemon=True).start()
    return crawl_warc(job, report)


def _watch_fence(job: WarcJob) -> None:
    while True:
        time.sleep(FENCE_SECONDS)
        try:
            fenced(job)
        except CrawlLeaseLostError:
            os.kill(os.getpid(), signal.SIGTERM)
            return
        except Exception:  # noqa: BLE001, S112 - a store that fails: asked again, and each write asks too
            continue


def crawl_warc_in_process(
    job: WarcJob, report: ProgressCallback | None = None, stopping: Callable[[], bool] | None = None
) -> WarcOutcome:
    """Do ``job`` in a process of its own: its outcome; ``report(pages done, pages estimated)`` is called at most
    every :data:`~selection_crawl.unit.PROGRESS_SECONDS`.

    Raises:
        WarcProcessDied: the process died or stalled (the message names the WARC, and why).
        OwnProcessStopped: ``stopping()`` turned true (the WARC's commits stay for the next run).
    """
    last = [float("-inf")]

    def forward(done: int, estimate: int) -> None:
        now = time.monotonic()
        if report is not None and now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            report(done, estimate)

    stall = 3 * job.time_limit_seconds + STALL_MARGIN_SECONDS
    try:
        return run_in_own_process(_crawl_fenced, job, report=forward, stopping=stopping, stall=stall)
    except OwnProcessDied as exc:
        raise WarcProcessDied(f"{job.source}: {exc}; it is sent again from its last commit") from None


def crawl_warc_on_dask(job: WarcJob, stop_event: str) -> WarcOutcome:
    """:func:`crawl_warc_in_process` as a Dask task: its pages reported as events of
    :data:`~selection_crawl.unit.PROGRESS_TOPIC`, and stopped once the Dask event named ``stop_event`` is set."""
    from distributed import Event, get_worker  # only ever on a Dask worker

    worker = get_worker()
    event = Event(stop_event)
    asked = [float("-inf"), False]

    def report(done: int, estimate: int) -> None:
        worker.log_event(PROGRESS_TOPIC, (job.index, done, estimate))

    def stopping() -> bool:
        now = time.monotonic()
        if now - asked[0] >= PROGRESS_SECONDS:  # one call to the scheduler at most every few seconds
            asked[:] = [now, event.is_set()]
        return bool(asked[1])

    return crawl_warc_in_process(job, report, stopping)
