"""Extractor calls in worker processes (a pebble ``ProcessPool``), each call under a hard time limit, offline."""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import multiprocessing.util
import queue
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from selection_extraction.own_process import death_reason
from selection_extraction.processes import forkserver_context
from selection_extraction.settings import DEFAULT_RECYCLE_AFTER

if TYPE_CHECKING:  # pebble is the 'extract' extra's: imported by the first run
    from pebble import ProcessPool

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

#: Network attempts a run records word for word; any more are only counted (:class:`PoolStats`).
MAX_NETWORK_ATTEMPTS_KEPT: Final[int] = 100


class Outcome(NamedTuple):
    """One extractor call's text and title, or its ``"<ExceptionType>: message"`` error (then ``text`` is empty)."""

    text: str
    title: str | None
    error: str | None


#: ``(html, url) -> (text, title)``: a module-level function or a :class:`FunctionRef`.
ExtractorFunction = Callable[[str, "str | None"], tuple[str, "str | None"]]


class NetworkBlockedError(ConnectionError):
    """Raised inside a worker for any attempt to use the network."""


class WorkerSetupError(RuntimeError):
    """A worker could not get ready: its initializer failed or a :class:`FunctionRef` did not resolve."""


@dataclass(frozen=True)
class FunctionRef:
    """A module-level function named by module and name: it pickles as the names, so the process that hands it to
    a worker does not import the module."""

    module: str
    name: str

    def resolve(self) -> Callable[..., Any]:
        """The function itself (its module imported)."""
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args: Any) -> Any:
        return self.resolve()(*args)


@dataclass
class PageJob:
    """One page to extract, and the names of the extractors to run on it."""

    index: int
    html: str
    url: str | None
    names: list[str]


@dataclass
class PoolStats:
    """What happened to the calls of a run (not part of any output file)."""

    timeouts: int = 0
    crashes: int = 0
    network_attempts: list[str] = field(default_factory=list)
    more_network_attempts: int = 0

    def record_network_attempts(self, attempts: Iterable[str]) -> None:
        """Keep the first :data:`MAX_NETWORK_ATTEMPTS_KEPT` attempts of the run, count the others."""
        for attempt in attempts:
            if len(self.network_attempts) < MAX_NETWORK_ATTEMPTS_KEPT:
                self.network_attempts.append(attempt)
            else:
                self.more_network_attempts += 1


def error_text(exc: BaseException) -> str:
    """``"<ExceptionType>: message"`` on one line, the message shortened to :data:`MAX_ERROR_CHARS`."""
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


def quiet_libraries() -> None:
    """Keep library warnings and log records out of the terminal (every exception still becomes an ``error``)."""
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


class _SetupFailed(NamedTuple):
    error: str


_functions: dict[str, Callable[..., Any]] = {}
_setup_failed: _SetupFailed | None = None


def _setup_worker(functions: Mapping[str, ExtractorFunction], initializer: Callable[[], None] | None) -> None:
    """Resolve the functions, then block the network, then run ``initializer``; keep any failure for the calls."""
    global _setup_failed  # noqa: PLW0603 - one worker process, one setup
    # pebble stops a worker with SIGTERM; its Python handler would never run in a call stuck in C code.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        # Resolved before the guard: importing a library is not extracting (urllib3 probes IPv6 with a socket).
        resolved = {name: f.resolve() if isinstance(f, FunctionRef) else f for name, f in functions.items()}
        if isinstance(initializer, FunctionRef):
            initializer.resolve()
        sys.addaudithook(_network_audit_hook)  # blocks and records every network attempt from now on
        quiet_libraries()
        if initializer is not None:
            initializer()
    except Exception as exc:  # noqa: BLE001 - reported by every call, which stops the run
        _setup_failed = _SetupFailed(error_text(exc))
        return
    _functions.update(resolved)


def _call(name: str, html: str, url: str | None) -> tuple[Outcome, list[str]] | _SetupFailed:
    """One call in a worker: its outcome and the network attempts it made."""
    if _setup_failed is not None:
        return _setup_failed
    outcome = call_extractor(_functions[name], html, url)
    attempts = list(_network_attempts)
    _network_attempts.clear()
    return outcome, attempts


# --------------------------------------------------------------------------- parent side


#: Idle pools kept by runs with ``keep_workers=True``, by what they were started with.
_idle: dict[tuple[Any, ...], list[ProcessPool]] = {}
_idle_lock = threading.Lock()
#: Pools being stopped in the background.
_stopping: set[threading.Thread] = set()


def _stop(pool: ProcessPool, *, wait: bool = True) -> None:
    """Stop ``pool``'s workers; without ``wait``, in the background (pebble's join waits out its 0.1 s polling)."""
    pool.stop()
    if wait:
        pool.join()
        return
    thread = threading.Thread(target=pool.join, name="content-selection-pool-stop", daemon=True)
    thread.start()
    with _idle_lock:
        _stopping.difference_update([t for t in _stopping if not t.is_alive()])
        _stopping.add(thread)


def _stop_all() -> None:
    """Stop every pool of this process: its non-daemonic workers would otherwise block its exit."""
    stop_kept_workers()
    with _idle_lock:
        threads = list(_stopping)
    for thread in threads:
        thread.join()


def _stop_all_at_exit(_module: object = None) -> None:
    """Stop this process's pools when it exits, and forget a parent's pools in a forked child.

    A multiprocessing child (a task runner's worker) runs no atexit hook, not even pebble's, but joins its
    non-daemonic children (pebble's workers) before it exits: this finalizer runs first. A child clears the
    finalizers it inherits, so a child forked after this module was imported (by a fork server that preloaded
    it) registers its own.
    """
    global _idle_lock  # noqa: PLW0603 - a lock held by another thread of the parent is never released here
    _idle_lock = threading.Lock()
    _idle.clear()
    _stopping.clear()
    multiprocessing.util.Finalize(None, _stop_all, exitpriority=100)


_stop_all_at_exit()
multiprocessing.util.register_after_fork(sys.modules[__name__], _stop_all_at_exit)


def stop_kept_workers() -> int:
    """Stop the workers kept by ``keep_workers=True`` runs in this process; return how many there were."""
    with _idle_lock:
        kept = [(key, pool) for key, pools in _idle.items() for pool in pools]
        _idle.clear()
    for _, pool in kept:
        _stop(pool)
    return sum(key[3] for key, _ in kept)  # key[3]: the pool's workers


def run_jobs(
    jobs: Iterable[PageJob],
    functions: Mapping[str, ExtractorFunction],
    on_outcome: Callable[[int, str, Outcome], None],
    *,
    workers: int,
    time_limit: float,
    recycle_after: int = DEFAULT_RECYCLE_AFTER,
    preload: Sequence[str] = (),
    initializer: Callable[[], None] | None = None,
    keep_workers: bool = False,
) -> PoolStats:
    """Run every job's extractors in ``workers`` processes; call ``on_outcome(job index, name, outcome)`` once per
    call, in this thread, in completion order.

    Each call may take ``time_limit`` seconds; one that overruns is killed with its worker (a ``TimeoutError``
    outcome). A call whose worker dies (killed from outside, out of memory) is run again in a fresh worker; only a
    second death of the same call gives it a ``WorkerCrashedError`` outcome (so one kill changes no outcome, and a
    page that kills its worker every time fails the same way every run). A dead worker is replaced. Jobs are
    taken lazily (``workers + 1`` in flight). A worker is replaced after ``recycle_after`` pages' worth of calls;
    ``preload`` is imported once by the fork server; ``initializer`` runs once per worker, after the network
    guard; ``keep_workers`` keeps the workers for the next run in this process with the same arguments.

    Raises:
        WorkerSetupError: a worker's initializer failed or a function reference did not resolve.
    """
    from pebble import ProcessPool

    key = (tuple(functions.items()), initializer, tuple(preload), workers, recycle_after)
    with _idle_lock:
        idle = _idle.get(key)
        pool = idle.pop() if idle else None

    def fresh_pool() -> ProcessPool:
        return ProcessPool(
            workers,
            max_tasks=recycle_after * max(1, len(functions)),
            initializer=_setup_worker,
            initargs=(dict(functions), initializer),
            context=forkserver_context("pebble", *preload),
        )

    run = _Run(pool or fresh_pool(), fresh_pool, iter(jobs), time_limit)
    try:
        run.until_done(workers + 1, on_outcome)
    except BaseException:
        _stop(run.pool, wait=False)
        raise
    if keep_workers and run.pool.active:
        with _idle_lock:
            _idle.setdefault(key, []).append(run.pool)
    else:
        _stop(run.pool, wait=False)
    return run.stats


class _Run:
    """The calls of one :func:`run_jobs` on a pool: each scheduled, its future's end queued for the caller's
    thread, and a call whose worker died (or whose pool broke) run again once."""

    def __init__(
        self, pool: ProcessPool, fresh_pool: Callable[[], ProcessPool], source: Iterator[PageJob], time_limit: float
    ) -> None:
        self.pool, self.fresh_pool, self.source, self.time_limit = pool, fresh_pool, source, time_limit
        self.stats = PoolStats()
        self.done: queue.SimpleQueue[tuple[PageJob, str, Future[Any]]] = queue.SimpleQueue()
        self.calls: dict[tuple[int, str], tuple[PageJob, Future[Any]]] = {}  # every call still out, and its future
        self.remaining: dict[int, int] = {}  # calls still out, by job index
        self.retried: set[tuple[int, str]] = set()  # calls run again after a pool broke
        self.died: set[tuple[int, str]] = set()  # calls whose worker died once under them

    def until_done(self, ahead: int, on_outcome: Callable[[int, str, Outcome], None]) -> None:
        """Take ``ahead`` jobs, then one more as each ends, until every call has its outcome."""
        for _ in range(ahead):
            self.next_job()
        while self.remaining:
            job, name, future = self.done.get()
            if self.calls.get((job.index, name), (None, None))[1] is not future:
                continue  # a call of a pool given up, run again since
            outcome = self.outcome_of(job, name, future)
            if outcome is None:
                continue
            del self.calls[job.index, name]
            on_outcome(job.index, name, outcome)
            self.remaining[job.index] -= 1
            if not self.remaining[job.index]:
                del self.remaining[job.index]
                self.next_job()

    def schedule(self, job: PageJob, name: str) -> None:
        try:
            future = self.pool.schedule(_call, (name, job.html, job.url), timeout=self.time_limit)
        except RuntimeError:
            if self.pool.active:
                raise
            self.replace_pool()  # it broke before this call reached it (a worker died with no call to run)
            future = self.pool.schedule(_call, (name, job.html, job.url), timeout=self.time_limit)
        self.calls[job.index, name] = (job, future)
        future.add_done_callback(lambda f: self.done.put((job, name, f)))

    def replace_pool(self) -> None:
        """A fresh pool for a broken one; every call still out is run again on it, once."""
        _stop(self.pool, wait=False)
        self.pool = self.fresh_pool()
        self.retried.update(self.calls)
        for (_, call_name), (again, _) in list(self.calls.items()):
            self.schedule(again, call_name)

    def next_job(self) -> None:
        for job in self.source:
            if job.names:
                self.remaining[job.index] = len(job.names)
                for name in job.names:
                    self.schedule(job, name)
                return

    def outcome_of(self, job: PageJob, name: str, future: Future[Any]) -> Outcome | None:
        """The call's outcome, or None when it was run again (its worker died once, or the pool broke)."""
        from pebble import ProcessExpired

        try:
            result = future.result()
        except TimeoutError:
            self.stats.timeouts += 1
            message = f"{name} did not finish within {self.time_limit:g} s on this page; its worker process was killed"
            return Outcome("", None, f"TimeoutError: {message}")
        except ProcessExpired as exc:
            if (job.index, name) not in self.died:
                self.died.add((job.index, name))
                self.schedule(job, name)
                return None
            self.stats.crashes += 1
            reason = death_reason(exc.exitcode)
            return Outcome("", None, f"WorkerCrashedError: the worker process running {name} died ({reason})")
        except BrokenProcessPool:  # a worker died with no call known to run: pebble gives up the pool
            if (job.index, name) in self.retried:
                self.stats.crashes += 1
                return Outcome("", None, f"WorkerCrashedError: the worker process running {name} died")
            self.replace_pool()
            return None
        if isinstance(result, _SetupFailed):
            raise WorkerSetupError(f"an extraction worker could not start: {result.error}")
        outcome, attempts = result
        self.stats.record_network_attempts(f"page {job.index} {name}: {a}" for a in attempts)
        return outcome
