"""One WARC in a process of its own, watched by the thread that started it.

A crawl's worker (a thread of a Dask worker, or a thread of the local coordinator) does not run a WARC itself: it
starts a fresh interpreter (``python -m selection_crawl.process``), the leader of its own process group, hands it
the :class:`~selection_crawl.unit.WarcJob` on its standard input and reads, on its standard output, a line per
second while pages are done and, last, the WARC's outcome. So nothing process-wide of the worker is touched (a
Dask worker runs several WARCs at once in one daemonic process, where multiprocessing refuses children): the
WARC's extractor processes are the children of its own process, and the process group is the WARC.

The thread (:func:`crawl_warc_in_process`) is the WARC's watchdog:

- a WARC with no page done and nothing written for :func:`stall_seconds` (tied to the time limit) has its group
  killed, and :class:`WarcProcessDied` names it: the crawl sends it again, from its last commit;
- a stop asked by the crawl (``stopping()`` true) sends SIGTERM to the group: the WARC's process stops where it is,
  an upload it had begun is aborted, and nothing half-written is left (its commits stay for the next run); after
  :data:`STOP_GRACE_SECONDS`, SIGKILL;
- the WARC's process reads its standard input to its end: when the worker that started it dies (a killed Dask
  worker, a killed coordinator), the pipe closes and the WARC's process kills its own group.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import orjson

from selection_crawl.unit import PROGRESS_SECONDS, PROGRESS_TOPIC, WarcJob, WarcOutcome, crawl_warc

#: Seconds without a page done or a piece written, beyond three time limits (a page's three extractors, in turn),
#: after which a WARC is taken as stalled.
STALL_MARGIN_SECONDS: Final[float] = 120.0

#: Seconds a WARC's process has to stop after SIGTERM before its group is killed.
STOP_GRACE_SECONDS: Final[float] = 10.0

#: Least seconds between two lines of a WARC's process to its watchdog (each says it is alive).
_BEAT_SECONDS: Final[float] = 1.0


class WarcProcessDied(Exception):
    """A WARC's process ended without an outcome (killed, out of memory), or was killed as stalled; the message
    names the WARC. The crawl sends the WARC again."""


class WarcStopped(Exception):
    """The crawl asked its WARCs to stop, and this one did (its commits stay for the next run)."""


def stall_seconds(time_limit_seconds: float) -> float:
    """Seconds without a page done after which a WARC doing pages under ``time_limit_seconds`` is stalled."""
    return 3 * time_limit_seconds + STALL_MARGIN_SECONDS


def crawl_warc_in_process(
    job: WarcJob,
    report: Callable[[int, int], None] | None = None,
    stopping: Callable[[], bool] | None = None,
) -> WarcOutcome:
    """Do ``job`` in a process of its own (see the module): its outcome, with ``report(pages done, pages
    estimated)`` called at most every :data:`~selection_crawl.unit.PROGRESS_SECONDS` on the way, and
    ``stopping()`` asked about every second.

    Raises:
        WarcProcessDied: the process died or stalled (the message names the WARC and why).
        WarcStopped: ``stopping()`` became true.
    """
    stall = stall_seconds(job.time_limit_seconds)
    child = subprocess.Popen(  # noqa: S603 - this interpreter, this module
        [sys.executable, "-m", __name__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(pickle.dumps(job))
        child.stdin.flush()  # kept open: its end is this worker's end
        outcome = _watch(job, child, report, stopping, stall)
    except BaseException:
        _kill_group(child.pid)
        raise
    finally:
        _end(child)
    if outcome is None:
        raise WarcProcessDied(f"{job.source}: its process died ({_exit_reason(child.returncode)}); sent again")
    return outcome


def _watch(
    job: WarcJob,
    child: subprocess.Popen[bytes],
    report: Callable[[int, int], None] | None,
    stopping: Callable[[], bool] | None,
    stall: float,
) -> WarcOutcome | None:
    """Read the child's lines until it closes its output: its outcome (None: it died first)."""
    assert child.stdout is not None
    outcome: WarcOutcome | None = None
    buffer = b""
    seen = time.monotonic()
    reported = float("-inf")
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            if selector.select(timeout=_BEAT_SECONDS):
                data = os.read(child.stdout.fileno(), 65536)
                if not data:
                    return outcome
                seen = time.monotonic()
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    kind, *values = orjson.loads(line)
                    if kind == "outcome":
                        outcome = WarcOutcome.from_json(values[0])
                    elif report is not None and seen - reported >= PROGRESS_SECONDS:
                        reported = seen
                        report(*values)
            if stopping is not None and stopping():
                _stop_group(child)
                raise WarcStopped(f"{job.source}: stopped; its commits are kept for the next run")
            if time.monotonic() - seen > stall:
                raise WarcProcessDied(
                    f"{job.source}: no page done for {stall:.0f} s (3 time limits and {STALL_MARGIN_SECONDS:.0f} s); "
                    "its process was killed, and it is sent again from its last commit"
                )


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the WARC's group; SIGKILL after :data:`STOP_GRACE_SECONDS`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(STOP_GRACE_SECONDS)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _end(child: subprocess.Popen[bytes]) -> None:
    """Wait for the WARC's process (it exits once its outcome is written), then kill what is left of its group
    (its leader not yet reaped, the group's id cannot be another's), then reap it."""
    assert child.stdin is not None and child.stdout is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        child.stdin.close()  # the child's watch ends: it exits if it has not
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass
    _kill_group(child.pid)
    child.wait()
    child.stdout.close()


def _exit_reason(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def crawl_warc_on_dask(job: WarcJob, stop_event: str) -> WarcOutcome:
    """:func:`crawl_warc_in_process` as a Dask task: its pages reported as events of
    :data:`~selection_crawl.unit.PROGRESS_TOPIC`, and stopped when the Dask event named ``stop_event`` is set."""
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


# --------------------------------------------------------------------------- the WARC's process


def _exit_when_orphaned() -> None:
    """Read standard input to its end (the watchdog's end), then kill this process's group."""
    with contextlib.suppress(OSError):
        while os.read(0, 65536):  # unbuffered: no lock for the interpreter's exit to wait on
            pass
    os.killpg(os.getpid(), signal.SIGKILL)


def _stop(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds the WARC where it is: an upload begun is aborted, a temporary file removed


def main() -> int:
    """The WARC's process: the job from standard input, lines to standard output (what libraries print goes to
    standard error), the outcome last."""
    lines = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    job: WarcJob = pickle.load(sys.stdin.buffer)  # noqa: S301 - from the watchdog that started this process
    threading.Thread(target=_exit_when_orphaned, name="content-selection-orphan-watch", daemon=True).start()
    signal.signal(signal.SIGTERM, _stop)
    beat = [float("-inf")]

    def report(done: int, estimate: int) -> None:
        now = time.monotonic()
        if now - beat[0] >= _BEAT_SECONDS:
            beat[0] = now
            lines.write(orjson.dumps(["pages", done, estimate]) + b"\n")

    try:
        outcome = crawl_warc(job, report)
    except KeyboardInterrupt:
        return 130
    lines.write(orjson.dumps(["outcome", outcome.to_json()]) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
