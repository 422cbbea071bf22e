"""Run extractor calls in worker processes, each call under a hard time limit.

Why processes: an extractor that hangs inside C code (an lxml parse, a regular
expression that backtracks forever) holds the GIL and never returns to the
interpreter, so no signal handler or thread can stop it. Only killing its
process does. Each page goes to one idle worker, which runs the page's
extractors one after the other and sends back one outcome per extractor. The
pool gives every call ``time_limit`` seconds: a worker that overruns is killed
(SIGKILL) and replaced, the call that overran gets a ``TimeoutError`` outcome,
and the page's remaining extractors go to a fresh worker. A worker that dies
(a crash in C code, the OOM killer) is handled the same way. Nothing a page
does can stop the batch.

The clock (``time.monotonic``) is used only for deadlines; it never reaches an
outcome, except through the fact that a call timed out.

Workers are started with the ``forkserver`` method: a clean, single-threaded
server process imports the extractor libraries once (``preload``), and every
worker is a cheap fork of it, so a killed worker is replaced in milliseconds.
That is also safe when the caller runs in a thread (a Prefect task), where a
plain ``fork`` of a multi-threaded process is not.

**Kept workers.** A caller that runs many small batches in one long-lived
process (a task runner's worker extracting one chunk of pages after another)
passes ``keep_workers=True``: the healthy idle workers are then kept after the
run, and the next run with the same extractors takes them instead of starting
new ones. A worker is still replaced after ``recycle_after`` pages in all (the
deterministic bound on whatever a library might keep from page to page: none was
measured, a worker's memory stays flat over 1,448 new pages, ``docs/performance.md``), and
every kept worker is a daemon that exits when this process does (or when its
pipe closes). What a worker returns does not depend on what it ran before: the
same extractors on the same page give the same outcome in any worker, which the
tests check by comparing runs cut into different chunks.

**Function references.** The extractors may be given as :class:`FunctionRef`
(module and name) rather than function objects, so that the caller does not
import the extractor libraries at all: only the fork server does (``preload``),
and every worker resolves the references once, before its first page. A worker
that cannot (a library missing or broken) says so and the run stops with
:class:`WorkerSetupError`, instead of recording one error per page.

**No network.** Every worker installs an audit hook (:pep:`578`) before it runs
anything: creating a socket, resolving a name, connecting, binding or sending
raises :class:`NetworkBlockedError` and is recorded. The records come back with
each outcome, so the caller can report them, and a test can prove there were none.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Final, NamedTuple

#: Longest error message kept in an outcome (characters).
MAX_ERROR_CHARS: Final[int] = 500

#: Audit events that mean "this process is about to use the network".
NETWORK_AUDIT_EVENTS: Final[frozenset[str]] = frozenset(
    {
        "socket.__new__",
        "socket.bind",
        "socket.connect",
        "socket.getaddrinfo",
        "socket.gethostbyaddr",
        "socket.gethostbyname",
        "socket.getnameinfo",
        "socket.sendmsg",
        "socket.sendto",
        "urllib.Request",
    }
)

#: Network attempts a run records word for word; any more are only counted
#: (:class:`PoolStats`). The records are for a person to read (the first few are
#: logged); without a cap, a library that tried the network on every page would
#: leave one record per page in the parent for the whole run.
MAX_NETWORK_ATTEMPTS_KEPT: Final[int] = 100

#: Seconds a stopping worker gets to exit by itself before it is killed.
_STOP_GRACE_SECONDS: Final[float] = 5.0


class Outcome(NamedTuple):
    """What one extractor call produced: its text and title, or an error.

    ``error`` is None or ``"<ExceptionType>: message"`` (one line); ``text`` is
    empty whenever there is an error.
    """

    text: str
    title: str | None
    error: str | None


#: An extractor: ``(html, url) -> (text, title)``. It must be a module-level
#: function (workers receive it by reference).
ExtractorFunction = Callable[[str, "str | None"], tuple[str, "str | None"]]


class NetworkBlockedError(ConnectionError):
    """Raised inside a worker for any attempt to use the network."""


class WorkerSetupError(RuntimeError):
    """A worker could not get ready: its initializer failed or a :class:`FunctionRef` did not resolve."""


class FunctionRef:
    """A module-level function named by its module and name, imported where it is first called.

    It pickles as the two names, so handing it to a worker process does not
    import the function's module in the process that hands it over.

    >>> ref = FunctionRef("os.path", "basename")
    >>> ref("/a/b.html"), ref == FunctionRef("os.path", "basename")
    ('b.html', True)
    """

    __slots__ = ("_function", "module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self._function: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The function itself (imported on first use)."""
        if self._function is None:
            self._function = getattr(importlib.import_module(self.module), self.name)
        return self._function

    def __call__(self, *args: Any) -> Any:
        return self.resolve()(*args)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FunctionRef, (self.module, self.name))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionRef) and (self.module, self.name) == (other.module, other.name)

    def __hash__(self) -> int:  # only keys the in-process registry of kept workers; never reaches an output
        return hash((self.module, self.name))

    def __repr__(self) -> str:
        return f"FunctionRef({self.module!r}, {self.name!r})"


class _SetupFailed(NamedTuple):
    """The one message of a worker that could not get ready."""

    error: str


@dataclass
class PageJob:
    """One page to extract: its decoded HTML, its URL, and the extractors still to run."""

    index: int
    html: str
    url: str | None
    names: list[str]


@dataclass
class PoolStats:
    """What happened to the workers during a run (not part of any output file)."""

    workers_started: int = 0
    workers_reused: int = 0
    timeouts: int = 0
    crashes: int = 0
    network_attempts: list[str] = field(default_factory=list)
    more_network_attempts: int = 0

    def record_network_attempts(self, attempts: Iterable[str]) -> None:
        """Keep the first :data:`MAX_NETWORK_ATTEMPTS_KEPT` attempts of the run, count the others.

        >>> stats = PoolStats()
        >>> stats.record_network_attempts(str(i) for i in range(MAX_NETWORK_ATTEMPTS_KEPT + 3))
        >>> len(stats.network_attempts), stats.more_network_attempts
        (100, 3)
        """
        for attempt in attempts:
            if len(self.network_attempts) < MAX_NETWORK_ATTEMPTS_KEPT:
                self.network_attempts.append(attempt)
            else:
                self.more_network_attempts += 1


def error_text(exc: BaseException) -> str:
    """``"<ExceptionType>: message"`` on one line, the message shortened to :data:`MAX_ERROR_CHARS`.

    >>> error_text(ValueError("bad\\n  value"))
    'ValueError: bad value'
    """
    message = " ".join(str(exc).split()) or "(no message)"
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {message}"


# --------------------------------------------------------------------------- worker side

_network_attempts: list[str] = []


#: Audit events whose first argument is the socket object itself (left out of the record).
_SOCKET_METHOD_EVENTS: Final[frozenset[str]] = frozenset(
    {"socket.__new__", "socket.bind", "socket.connect", "socket.sendmsg", "socket.sendto"}
)


def _network_audit_hook(event: str, args: tuple[Any, ...]) -> None:
    if event in NETWORK_AUDIT_EVENTS:
        detail = " ".join(repr(args[1:] if event in _SOCKET_METHOD_EVENTS else args).split())
        _network_attempts.append(f"{event} {detail[:200]}")
        raise NetworkBlockedError(f"{event}: network access is blocked during extraction")


def install_network_guard() -> None:
    """Block and record every network attempt of this process from now on (cannot be undone)."""
    sys.addaudithook(_network_audit_hook)


def quiet_libraries() -> None:
    """Keep library warnings and log records out of the user's terminal.

    Errors are not lost: every exception of an extractor becomes its outcome's ``error``.
    """
    warnings.simplefilter("ignore")
    logging.getLogger().addHandler(logging.NullHandler())
    logging.getLogger().setLevel(logging.CRITICAL)


def call_extractor(function: ExtractorFunction, html: str, url: str | None) -> Outcome:
    """Run one extractor and turn whatever happens (but an interrupt) into an :class:`Outcome`."""
    try:
        text, title = function(html, url)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit from a library is an error of that call
        return Outcome("", None, error_text(exc))
    if not isinstance(text, str):
        return Outcome("", None, f"TypeError: the extractor returned {type(text).__name__}, not str")
    return Outcome(text, title if isinstance(title, str) else None, None)


def _worker_main(
    conn: Connection,
    functions: Mapping[str, ExtractorFunction],
    initializer: Callable[[], None] | None,
) -> None:
    try:
        # Imported before the guard, as the fork server's preload and function
        # objects unpickled at the worker's start are: importing a library is not
        # extracting (urllib3, for one, opens a socket at import to probe for IPv6).
        for function in (*functions.values(), initializer):
            if isinstance(function, FunctionRef):
                function.resolve()
        install_network_guard()
        quiet_libraries()
        if initializer is not None:
            initializer()
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops the run
        conn.send(_SetupFailed(error_text(exc)))
        return
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        for name in job.names:
            outcome = call_extractor(functions[name], job.html, job.url)
            attempts = list(_network_attempts)
            _network_attempts.clear()
            conn.send((job.index, name, outcome, attempts))


# --------------------------------------------------------------------------- parent side


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def allow_child_processes() -> Iterator[None]:
    """Let this process start the pool's workers even when it is daemonic.

    Dask's worker processes are daemonic by default, and :mod:`multiprocessing`
    refuses to start children from a daemonic process (so that they cannot be
    orphaned). The pool's own workers are daemonic and exit when their pipe to
    this process closes, so lifting the flag while a run lasts is safe.
    """
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]  # noqa: SLF001 - no public way
    daemon = config.get("daemon")
    if not daemon:
        yield
        return
    config["daemon"] = False
    try:
        yield
    finally:
        config["daemon"] = daemon


def _context(preload: Sequence[str]) -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(preload))  # only takes effect when the server starts
        return ctx
    return multiprocessing.get_context("spawn")


class _Worker:
    def __init__(self, ctx: Any, functions: Mapping[str, ExtractorFunction], initializer: Any, number: int) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=_worker_main,
            args=(child, dict(functions), initializer),
            name=f"content-selection-extract-{number}",
            daemon=True,
        )
        self.process.start()
        child.close()
        self.job: PageJob | None = None
        self.deadline = 0.0
        self.served = 0
        self.stopped = False

    def send(self, job: PageJob, time_limit: float) -> None:
        self.conn.send(job)
        self.job = job
        self.deadline = time.monotonic() + time_limit

    def stop(self, kill: bool = False) -> None:
        if self.stopped:
            return
        self.stopped = True
        if not kill and self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(_STOP_GRACE_SECONDS)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()
        self.process.close()


def _reap(process: Any) -> str:
    """Wait for a dying worker to be gone and say how it died."""
    process.join(_STOP_GRACE_SECONDS)
    if process.is_alive():  # its pipe broke but it lives on: make sure it is gone
        process.kill()
        process.join()
    return _death_reason(process.exitcode)


def _death_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


#: Idle workers kept by runs with ``keep_workers=True``, by what they were started with.
_kept: dict[tuple[Any, ...], list[_Worker]] = {}
_kept_lock = threading.Lock()


def _pool_key(
    functions: Mapping[str, ExtractorFunction], initializer: Callable[[], None] | None, preload: Sequence[str]
) -> tuple[Any, ...]:
    return (tuple(functions.items()), initializer, tuple(preload))


def _take_kept(key: tuple[Any, ...], most: int) -> list[_Worker]:
    """Up to ``most`` kept idle workers started for ``key``, now owned by the caller (dead ones are reaped)."""
    taken: list[_Worker] = []
    with _kept_lock:
        idle = _kept.get(key, [])
        while idle and len(taken) < most:
            taken.append(idle.pop())
    alive = []
    for worker in taken:
        if worker.process.is_alive():
            alive.append(worker)
        else:
            worker.stop(kill=True)
    return alive


def _keep(key: tuple[Any, ...], workers: Iterable[_Worker]) -> None:
    with _kept_lock:
        _kept.setdefault(key, []).extend(workers)


def kept_worker_count() -> int:
    """How many idle workers this process keeps for its next ``keep_workers=True`` run."""
    with _kept_lock:
        return sum(len(idle) for idle in _kept.values())


def kept_worker_pids() -> list[int]:
    """The process ids of the idle workers this process keeps (to watch them: their memory, their recycling)."""
    with _kept_lock:
        return [worker.process.pid for idle in _kept.values() for worker in idle if worker.process.pid is not None]


def stop_kept_workers() -> int:
    """Stop every worker kept by ``keep_workers=True`` runs in this process; return how many there were.

    Not needed before exiting (kept workers are daemons that exit with this process);
    useful to free their memory in a long-lived process.
    """
    with _kept_lock:
        workers = [worker for idle in _kept.values() for worker in idle]
        _kept.clear()
    for worker in workers:
        worker.stop()
    return len(workers)


def run_jobs(
    jobs: Iterable[PageJob],
    functions: Mapping[str, ExtractorFunction],
    on_outcome: Callable[[int, str, Outcome], None],
    *,
    workers: int,
    time_limit: float,
    recycle_after: int = 500,
    preload: Sequence[str] = (),
    initializer: Callable[[], None] | None = None,
    keep_workers: bool = False,
) -> PoolStats:
    """Run every job's extractors in ``workers`` processes; call ``on_outcome`` once per (job, extractor).

    Jobs are taken from ``jobs`` lazily, one per idle worker, and one more while
    every worker is busy (so the next page is read while the others are extracted),
    so only the pages in flight and one more are held in memory. Outcomes arrive in completion order; the
    caller puts them in place by job index.

    Args:
        jobs: The pages, with the names of the extractors to run on each.
        functions: Extractor functions by name (module-level functions).
        on_outcome: Called in this thread with ``(job index, extractor name, outcome)``.
        workers: Number of worker processes (at least 1).
        time_limit: Seconds each extractor call may take before its worker is killed.
        recycle_after: Replace a worker after this many pages (bounds leaks in libraries).
        preload: Modules the fork server imports once for all workers.
        initializer: Module-level function each worker runs once before its first page.
        keep_workers: Keep the healthy idle workers after the run for the next run
            with the same ``functions``, ``initializer`` and ``preload`` in this
            process, and start by taking the ones kept before (see the module's notes).

    Returns:
        Counts of workers started and reused, timeouts and crashes, and the network attempts seen.

    Raises:
        WorkerSetupError: a worker's initializer failed or a function reference did not resolve.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if time_limit <= 0:
        raise ValueError("time_limit must be positive")
    ctx = _context(preload)
    stats = PoolStats()
    retry: deque[PageJob] = deque()
    ahead: deque[PageJob] = deque()  # at most one page, read while the workers extract
    source: Iterator[PageJob] = iter(jobs)
    key = _pool_key(functions, initializer, preload) if keep_workers else None
    pool: list[_Worker] = _take_kept(key, workers) if key is not None else []
    stats.workers_reused = len(pool)

    def next_job() -> PageJob | None:
        if retry:
            return retry.popleft()
        if ahead:
            return ahead.popleft()
        return next(source, None)

    def read_ahead() -> None:
        # Reading and decoding the next page here, while every worker is busy, takes it
        # off the path between one page's last outcome and the next page's dispatch.
        if not ahead:
            job = next(source, None)
            if job is not None:
                ahead.append(job)

    def start(number: int) -> _Worker:
        stats.workers_started += 1
        return _Worker(ctx, functions, initializer, number)

    def fail_current(slot: int, error: str, *, kill: bool) -> None:
        worker = pool[slot]
        job = worker.job
        assert job is not None
        worker.job = None
        worker.stop(kill=kill)
        on_outcome(job.index, job.names.pop(0), Outcome("", None, error))
        if job.names:
            retry.appendleft(job)
        pool[slot] = start(slot)

    def dispatch(slot: int, job: PageJob) -> None:
        worker = pool[slot]
        if worker.served >= recycle_after or not worker.process.is_alive():
            worker.stop()
            pool[slot] = worker = start(slot)
        try:
            worker.send(job, time_limit)
        except OSError:  # it died while idle: replace it and send once more
            worker.job = None
            worker.stop(kill=True)
            pool[slot] = worker = start(slot)
            worker.send(job, time_limit)

    try:
        while True:
            for slot in range(len(pool)):
                if pool[slot].job is None:
                    job = next_job()
                    if job is None:
                        break
                    dispatch(slot, job)
            while len(pool) < workers:  # start workers only as there are pages for them
                job = next_job()
                if job is None:
                    break
                pool.append(start(len(pool)))
                dispatch(len(pool) - 1, job)
            busy = [slot for slot, worker in enumerate(pool) if worker.job is not None]
            if not busy:  # every idle worker asked for a job and none was left
                break
            if len(busy) == workers:
                read_ahead()
            timeout = max(0.0, min(pool[s].deadline for s in busy) - time.monotonic())
            handles: list[Any] = [pool[s].conn for s in busy] + [pool[s].process.sentinel for s in busy]
            wait(handles, timeout)
            for slot in busy:
                worker = pool[slot]
                job = worker.job
                assert job is not None
                if worker.conn.poll():
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):  # the pipe closed: the worker died mid-call
                        stats.crashes += 1
                        fail_current(
                            slot,
                            f"WorkerCrashedError: the worker process running {job.names[0]} "
                            f"died ({_reap(worker.process)})",
                            kill=True,
                        )
                        continue
                    if isinstance(message, _SetupFailed):
                        raise WorkerSetupError(f"an extraction worker could not start: {message.error}")
                    index, name, outcome, attempts = message
                    if attempts:
                        stats.record_network_attempts(f"page {index} {name}: {a}" for a in attempts)
                    job.names.pop(0)
                    on_outcome(index, name, outcome)
                    if job.names:
                        worker.deadline = time.monotonic() + time_limit
                    else:
                        worker.job = None
                        worker.served += 1
                elif not worker.process.is_alive():
                    stats.crashes += 1
                    fail_current(
                        slot,
                        f"WorkerCrashedError: the worker process running {job.names[0]} died ({_reap(worker.process)})",
                        kill=True,
                    )
                elif time.monotonic() >= worker.deadline:
                    stats.timeouts += 1
                    fail_current(
                        slot,
                        f"TimeoutError: {job.names[0]} did not finish within {time_limit:g} s "
                        "on this page; its worker process was killed",
                        kill=True,
                    )
    except BaseException:
        for worker in pool:
            worker.stop(kill=worker.job is not None)
        raise
    kept: list[_Worker] = []
    for worker in pool:
        if key is not None and worker.job is None and worker.served < recycle_after and worker.process.is_alive():
            kept.append(worker)
        else:
            worker.stop()
    if key is not None:
        _keep(key, kept)
    return stats
