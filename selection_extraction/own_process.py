"""A function run in a process of its own, watched by the thread that started it.

:func:`run_in_own_process` starts a fresh interpreter (running :func:`main` of this module), the leader of
its own process group, hands it the function's name and its argument on its standard input, and reads frames on its
standard output: a beat ``(done, estimate)`` at most every second while the function reports progress, then its
result or its exception. Nothing process-wide of the caller is touched: a Dask worker runs several tasks at once in
one daemonic process, where multiprocessing refuses children; the function's own children (its extractor
processes) are the new process's, and its process group is the work.

The watching thread:

- kills the group when no beat came for ``stall`` seconds (:class:`OwnProcessDied`);
- when ``stopping()`` turns true, sends SIGTERM to the group (the function is interrupted where it is:
  ``KeyboardInterrupt``, so that a write it had begun is undone), then SIGKILL after :data:`STOP_GRACE_SECONDS`
  (:class:`OwnProcessStopped`);
- always ends with the group gone and its leader reaped.

The new process reads its standard input to its end: when the process that started it dies, the pipe closes and it
kills its own group. Nothing it leaves outlives its caller.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from selection_core.batch import ProgressCallback

#: Seconds the process has to stop after SIGTERM before its group is killed.
STOP_GRACE_SECONDS: Final[float] = 10.0

#: Least seconds between two beats of the process to its watcher.
BEAT_SECONDS: Final[float] = 1.0

#: A frame: its kind (one byte) and its length (four bytes, big-endian), then its pickled payload.
_HEAD: Final[struct.Struct] = struct.Struct(">cI")
_BEAT, _RESULT, _RAISED = b"b", b"r", b"x"

#: What the process of its own runs: this module's :func:`main` (``-c``, not ``-m``: the package imports this
#: module, and runpy warns on stderr when a ``-m`` module is imported before it runs).
_MAIN: Final[str] = f"import sys; from {__name__} import main; sys.exit(main())"


class OwnProcessDied(Exception):
    """The process ended without a result (killed, out of memory), or was killed as stalled."""


class OwnProcessStopped(Exception):
    """``stopping()`` turned true, and the process was stopped."""


def run_in_own_process(
    function: Callable[[Any, ProgressCallback], Any],
    argument: Any,
    *,
    report: ProgressCallback | None = None,
    stopping: Callable[[], bool] | None = None,
    stall: float | None = None,
) -> Any:
    """``function(argument, report)`` in a process of its own (see the module); ``function`` is module-level,
    ``argument`` and the result pickle. ``report`` gets each beat; ``stopping()`` is asked about every second.

    Raises:
        OwnProcessDied: the process died, or had no beat for ``stall`` seconds (it is killed).
        OwnProcessStopped: ``stopping()`` turned true.
        Exception: what ``function`` raised, as it raised it.
    """
    child = subprocess.Popen(  # noqa: S603 - this interpreter, this module
        [sys.executable, "-c", _MAIN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert child.stdin is not None
    try:
        child.stdin.write(pickle.dumps((function.__module__, function.__name__, argument)))
        child.stdin.flush()  # kept open: its end is the caller's end
        kind, payload = _watch(child, report, stopping, stall)
    except BaseException:
        _kill_group(child.pid)
        raise
    finally:
        _end(child)
    if kind == _RAISED:
        raise payload
    if kind != _RESULT:
        raise OwnProcessDied(f"its process died ({death_reason(child.returncode)})")
    return payload


def _watch(
    child: subprocess.Popen[bytes],
    report: ProgressCallback | None,
    stopping: Callable[[], bool] | None,
    stall: float | None,
) -> tuple[bytes | None, Any]:
    """Read the child's frames until it closes its output: the last one's kind and payload (None: no result)."""
    assert child.stdout is not None
    last: tuple[bytes | None, Any] = (None, None)
    buffer = b""
    seen = time.monotonic()
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            if selector.select(timeout=BEAT_SECONDS):
                data = os.read(child.stdout.fileno(), 1 << 20)
                if not data:
                    return last
                seen = time.monotonic()
                buffer += data
                while len(buffer) >= _HEAD.size:
                    kind, size = _HEAD.unpack_from(buffer)
                    if len(buffer) < _HEAD.size + size:
                        break
                    payload = pickle.loads(buffer[_HEAD.size : _HEAD.size + size])  # noqa: S301 - our child's
                    buffer = buffer[_HEAD.size + size :]
                    if kind == _BEAT:
                        if report is not None:
                            report(*payload)
                    else:
                        last = (kind, payload)
            if stopping is not None and stopping():
                _stop_group(child)
                raise OwnProcessStopped("stopped")
            if stall is not None and time.monotonic() - seen > stall:
                raise OwnProcessDied(f"nothing moved for {stall:.0f} s; its process was killed")


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the group; SIGKILL after :data:`STOP_GRACE_SECONDS`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(STOP_GRACE_SECONDS)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _end(child: subprocess.Popen[bytes]) -> None:
    """Close the child's input (it exits if it has not), wait until it has exited, kill what is left of its group
    (its leader not yet reaped, the group's id cannot be another's), then reap it."""
    assert child.stdin is not None and child.stdout is not None
    with contextlib.suppress(OSError):
        child.stdin.close()
    with contextlib.suppress(ChildProcessError):
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    _kill_group(child.pid)
    child.wait()
    child.stdout.close()


def death_reason(exitcode: int | None) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


# --------------------------------------------------------------------------- the process of its own


def _exit_when_orphaned() -> None:
    """Read standard input to its end (the caller's end), then kill this process's group."""
    with contextlib.suppress(OSError):
        while os.read(0, 65536):  # unbuffered: no lock for the interpreter's exit to wait on
            pass
    os.killpg(os.getpid(), signal.SIGKILL)


def _interrupted(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # unwinds the function where it is: an upload begun is aborted, a temporary file removed


def main() -> int:
    """The process of its own: the call from standard input, frames to standard output (what libraries print goes
    to standard error), its result or exception last."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    module, name, argument = pickle.load(sys.stdin.buffer)  # noqa: S301 - from the caller that started this process
    threading.Thread(target=_exit_when_orphaned, name="content-selection-orphan-watch", daemon=True).start()
    signal.signal(signal.SIGTERM, _interrupted)
    function = getattr(importlib.import_module(module), name)
    beat = [float("-inf")]

    def send(kind: bytes, payload: Any) -> None:
        data = pickle.dumps(payload)
        out.write(_HEAD.pack(kind, len(data)) + data)

    def report(done: int, estimate: int) -> None:
        now = time.monotonic()
        if now - beat[0] >= BEAT_SECONDS:
            beat[0] = now
            send(_BEAT, (done, estimate))

    try:
        result = function(argument, report)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it
        try:
            send(_RAISED, exc)
        except Exception:  # noqa: BLE001 - an exception that does not pickle: its type and message
            send(_RAISED, RuntimeError(f"{type(exc).__name__}: {exc}"))
        return 1
    send(_RESULT, result)
    return 0
