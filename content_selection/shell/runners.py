"""Where a run's jobs execute, and the one dispatcher that hands them out: select's and extract's chunks in-process,
on plain worker processes over the cores, or on Dask (a Prefect task run each); the crawl's WARCs in processes of
their own watched by threads of this process, or on the workers of a Dask cluster."""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import logging
import os
import re
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, NamedTuple

from selection_core.batch import ProgressCallback
from selection_core.errors import EXIT_USAGE, SelectionError, ServiceUnavailableError, install_command
from selection_extraction.processes import available_cores, forkserver_context
from selection_storage.stores import connection_refusal

#: Environment variables read when the ``task_runner`` and ``dask_address`` parameters are left empty.
TASK_RUNNER_ENV: Final[str] = "CONTENT_SELECTION_TASK_RUNNER"
DASK_ADDRESS_ENV: Final[str] = "CONTENT_SELECTION_DASK_ADDRESS"

#: Tasks kept submitted ahead per worker: every worker stays busy, and little data is in flight.
IN_FLIGHT_PER_WORKER: Final[int] = 2

#: Seconds a Dask scheduler has to accept a connection before the run is refused.
DASK_CONNECT_TIMEOUT_SECONDS: Final[float] = 5.0

DASK_ADDRESS_PATTERN: Final[str] = r"^tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$"
_DASK_ADDRESS = re.compile(DASK_ADDRESS_PATTERN)

#: The Dask cluster started when no scheduler address is given (the health endpoint off the fixed port 8787).
LOCAL_CLUSTER_KWARGS: Final[dict[str, Any]] = {
    "n_workers": 2,
    "threads_per_worker": 1,
    "processes": True,
    "host": "127.0.0.1",
    "scheduler_port": 0,
    "dashboard_address": None,
    "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},
    # The cluster is the run's own: its worker processes' log lines (a heartbeat that meets the scheduler closing
    # at the end of a run, with its traceback) are not the user's; a task's failure still reaches the run.
    "silence_logs": logging.CRITICAL,
}


class TaskRunnerName(enum.StrEnum):
    IN_PROCESS = "in-process"
    PROCESS = "process"
    DASK = "dask"


class TaskRunnerConfigError(SelectionError):
    exit_code = EXIT_USAGE


def resolve_task_runner(name: str | None, dask_address: str | None) -> tuple[TaskRunnerName, str | None]:
    """The runner and scheduler address a run uses: the parameters, else the settings; an address alone means dask."""
    name = name or os.environ.get(TASK_RUNNER_ENV) or None
    address = dask_address or os.environ.get(DASK_ADDRESS_ENV) or None
    if name is None:
        name = TaskRunnerName.DASK if address else TaskRunnerName.IN_PROCESS
    try:
        runner = TaskRunnerName(name)
    except ValueError:
        choices = ", ".join(r.value for r in TaskRunnerName)
        raise TaskRunnerConfigError(f"unknown task runner {name!r}; choose one of {choices}") from None
    if address is not None:
        if _DASK_ADDRESS.fullmatch(address) is None or not 0 < int(address.rsplit(":", 1)[1]) < 65536:
            raise TaskRunnerConfigError(
                f"{address!r} is not a Dask scheduler address; write it as tcp://HOST:PORT (e.g. tcp://127.0.0.1:8786)"
            )
        if runner is not TaskRunnerName.DASK:
            raise TaskRunnerConfigError(
                f"a Dask scheduler address ({address}) was given with the {runner.value} task runner; "
                "choose the dask task runner or leave the address empty"
            )
    return runner, address


def check_dask_scheduler(address: str) -> None:
    """Refuse a run whose Dask scheduler (``tcp://HOST:PORT``) does not accept a connection, soon and in one line."""
    reason = connection_refusal(address, DASK_CONNECT_TIMEOUT_SECONDS)
    if reason is not None:
        raise ServiceUnavailableError(
            f"cannot reach the Dask scheduler at {address} ({reason}); check that it is running "
            "and that this machine can reach that host and port, or leave the address empty for a local cluster"
        )


@contextlib.contextmanager
def _api_reachable_from_workers() -> Iterator[None]:
    """Point ``PREFECT_API_URL`` at this process's ephemeral API, so that workers do not start their own."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()  # already running in a flow run that uses the embedded API: a no-op
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield


@contextlib.contextmanager
def _dask_runner(address: str | None) -> Iterator[Any]:
    """A started Dask runner (without an address, a local cluster of its own); stopped on exit."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise TaskRunnerConfigError(f"the dask task runner needs prefect-dask: {install_command('dask')}") from None
    with contextlib.ExitStack() as stack:
        stack.enter_context(_api_reachable_from_workers())
        if address is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="content-selection-dask-"))
            runner = DaskTaskRunner(cluster_kwargs={**LOCAL_CLUSTER_KWARGS, "local_directory": directory})
        else:
            check_dask_scheduler(address)
            runner = DaskTaskRunner(address=address)
        stack.enter_context(_quiet_dask_logs())  # left last: the cluster's shutdown logs too
        yield stack.enter_context(runner)


@contextlib.contextmanager
def _quiet_dask_logs() -> Iterator[None]:
    """Keep Dask's own information out of the run's log while a runner is open: the cluster's start and stop, and
    the ``CommClosedError`` traceback it may log when a clean shutdown closes a connection. Its warnings and errors
    still show."""
    import distributed  # noqa: F401 - its import sets its loggers' levels: set ours after it

    dask_logger = logging.getLogger("distributed")
    level = dask_logger.level
    dask_logger.setLevel(max(logging.WARNING, level))
    try:
        yield
    finally:
        dask_logger.setLevel(level)


@dataclass(frozen=True)
class Workers:
    """Where a run's jobs go, however they run: ``submit(key, job)``, a future of the job's result; ``count()``, the
    jobs that run at once now; ``stop()``, every job still running stops where it is (a job stopped, or the run
    ended); ``reports``, the progress the jobs report, as ``(key, done, estimate)``, appended as it comes;
    ``deaths``, what a job's future raises when its worker died under it (the job may be sent again); ``grace``,
    seconds to wait for the jobs still running once stopped (None: until they end)."""

    submit: Callable[[Any, Any], concurrent.futures.Future[Any]]
    count: Callable[[], int]
    stop: Callable[[], None] = lambda: None
    reports: deque[tuple[Any, int, int]] = field(default_factory=deque)
    deaths: tuple[type[BaseException], ...] = ()
    grace: float | None = None


_NO_MORE: Final[Any] = object()


class Ended(NamedTuple):
    """A job that ended: its key, its future (done), and how many times its worker died under it in a row before
    this end (none since its last report)."""

    key: Any
    future: concurrent.futures.Future[Any]
    deaths: int


def dispatch(
    workers: Workers,
    jobs: Iterable[tuple[Any, Any]],
    *,
    in_order: bool = False,
    max_deaths: int = 1,
    every: float | None = None,
    on_report: Callable[[Any, int, int], None] | None = None,
    on_tick: Callable[[], None] | None = None,
) -> Generator[Ended, None, None]:
    """Run each ``(key, job)`` on ``workers``, :data:`IN_FLIGHT_PER_WORKER` per worker in flight (jobs are taken
    lazily); yield each that ended, in order of ending (``in_order``: in the jobs' order).

    The one dispatcher of select's and extract's chunks and of the crawl's WARCs. A job whose worker died
    (``workers.deaths``) is sent again until it died ``max_deaths`` times in a row with no report between. At
    least every ``every`` seconds (and after each round of ends), the reports that came go to ``on_report`` and
    ``on_tick`` is called. On any exception or an early close, the jobs still running are stopped and waited for
    (``workers.grace``) before it goes on.
    """
    source = iter(jobs)
    waiting: deque[tuple[Any, Any]] = deque()  # jobs sent again, first
    pending: dict[concurrent.futures.Future[Any], tuple[Any, Any]] = {}  # in submission order
    deaths: dict[Any, int] = {}  # key: deaths in a row with no report
    try:
        while True:
            while len(pending) < IN_FLIGHT_PER_WORKER * workers.count():
                item = waiting.popleft() if waiting else next(source, _NO_MORE)
                if item is _NO_MORE:
                    break
                pending[workers.submit(*item)] = item
            if not pending:
                return
            watched = [next(iter(pending))] if in_order else pending
            ended, _ = concurrent.futures.wait(watched, timeout=every, return_when=concurrent.futures.FIRST_COMPLETED)
            for _ in range(len(workers.reports)):  # this thread alone takes from it
                key, done, estimate = workers.reports.popleft()
                deaths.pop(key, None)
                if on_report is not None:
                    on_report(key, done, estimate)
            for future in [f for f in pending if f in ended]:  # in submission order
                key, job = pending.pop(future)
                exc = future.exception()
                if isinstance(exc, workers.deaths):
                    deaths[key] = deaths.get(key, 0) + 1
                    if deaths[key] < max_deaths:
                        waiting.append((key, job))
                        continue
                yield Ended(key, future, deaths.pop(key, 0))
                del future  # this frame keeps no result once handed over: memory bounded by the jobs in flight
            if on_tick is not None:
                on_tick()
    except BaseException:
        workers.stop()
        concurrent.futures.wait(pending, timeout=workers.grace)
        raise


def map_in_order(workers: Workers, payloads: Iterable[Any]) -> Iterator[Any]:
    """The result of each payload run on ``workers``, in order (:func:`dispatch`); the first failure is raised."""
    with contextlib.closing(dispatch(workers, enumerate(payloads), in_order=True)) as ended:
        for one in ended:
            yield one.future.result()


def handed_over(task: Any) -> concurrent.futures.Future[Any]:
    """A ``concurrent.futures`` future of a Prefect or Dask future, which lets the task go once it has ended (unlike
    ``Client.get_executor()``, which holds every future: a finished WARC whose worker died would be done again)."""
    ended: concurrent.futures.Future[Any] = concurrent.futures.Future()
    ended.set_running_or_notify_cancel()

    def hand_over(task: Any) -> None:
        try:
            ended.set_result(task.result())
        except BaseException as exc:  # noqa: BLE001 - the task's failure, handed to the waiter as it is
            ended.set_exception(exc)
        finally:
            if hasattr(task, "release"):  # a Dask future: its result is no longer kept on the cluster
                task.release()

    task.add_done_callback(hand_over)
    return ended


@contextlib.contextmanager
def plain_processes(function: Callable[[Any], Any]) -> Iterator[Workers]:
    """Plain worker processes, one per core, that call ``function(job)``, for work that needs no Prefect; stopped
    on exit.

    The workers are forks of a server that imported only ``function``'s module, so they start in a fraction of a
    second (a Prefect worker imports Prefect first); the server starts now, and imports it while the caller gets
    its first work ready.
    """
    workers = available_cores()
    context = forkserver_context(function.__module__)
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()
        yield Workers(lambda _key, job: pool.submit(function, job), lambda: workers)


@contextlib.contextmanager
def watched_processes(
    function: Callable[[Any, ProgressCallback, Callable[[], bool]], Any],
    count: int,
    deaths: tuple[type[BaseException], ...],
    grace: float,
) -> Iterator[Workers]:
    """``count`` jobs at once, each ``function(job, report, stopping)`` in a thread of this process (which starts
    the job's own process and watches it, and raises one of ``deaths`` when it died); ``stopping()`` turns true
    once the workers are stopped, and they have ``grace`` seconds to end."""
    stop = threading.Event()
    reports: deque[tuple[Any, int, int]] = deque()

    def submit(key: Any, job: Any) -> concurrent.futures.Future[Any]:
        def report(done: int, estimate: int) -> None:
            reports.append((key, done, estimate))

        return pool.submit(function, job, report, stop.is_set)

    with concurrent.futures.ThreadPoolExecutor(count, thread_name_prefix="content-selection-job") as pool:
        try:
            yield Workers(submit, lambda: count, stop.set, reports, deaths, grace)
        finally:
            stop.set()  # the run ended: nothing still running goes on
            pool.shutdown(cancel_futures=True)


@contextlib.contextmanager
def dask_client(
    address: str,
    function: Callable[[Any, str], Any],
    topic: str,
    deaths: tuple[type[BaseException], ...],
    grace: float,
) -> Iterator[Workers]:
    """The workers of the Dask cluster at ``address``, each of their threads calling ``function(job, stop event's
    name)`` at a time; the jobs report as events ``(key, done, estimate)`` of ``topic``, and a stop sets the
    Dask event (the jobs have ``grace`` seconds to end). A job whose workers died until Dask gave up on it raises
    ``KilledWorker`` (beside ``deaths``)."""
    from distributed import Client, Event
    from distributed.scheduler import KilledWorker

    reports: deque[tuple[Any, int, int]] = deque()
    with Client(address, set_as_default=False, timeout=30) as client:
        client.subscribe_topic(topic, lambda event: reports.append(tuple(event[1])))
        name = f"content-selection-stop-{uuid.uuid4().hex}"
        stop = Event(name, client=client)

        def submit(_key: Any, job: Any) -> concurrent.futures.Future[Any]:
            return handed_over(client.submit(function, job, name, pure=False))

        def count() -> int:
            return max(1, sum(client.nthreads().values()))

        try:
            yield Workers(submit, count, stop.set, reports, (*deaths, KilledWorker), grace)
        finally:
            stop.set()


@contextlib.contextmanager
def chunk_runner(
    runner_name: TaskRunnerName, address: str | None, function: Callable[[Any], Any], task: Any
) -> Iterator[tuple[int, Callable[[Iterable[Any]], Iterator[Any]]]]:
    """Where a run's chunks go, the one way both stages hand them out; stopped on exit.

    Yields the number of workers and ``map(chunks)``, which yields ``function(chunk)`` for each chunk in order
    (:func:`map_in_order`). ``process``: plain worker processes (one per core) call ``function``, with no task run
    per chunk; ``in-process`` and ``dask``: each chunk is a run of ``task`` (``function`` as a Prefect task, called
    ``task(chunk=...)``) on the runner.
    """
    with contextlib.ExitStack() as stack:
        if runner_name is TaskRunnerName.PROCESS:
            workers = stack.enter_context(plain_processes(function))
        else:
            if runner_name is TaskRunnerName.IN_PROCESS:
                from prefect.context import FlowRunContext

                runner, count = FlowRunContext.get().task_runner, 1  # type: ignore[union-attr]
            else:
                runner = stack.enter_context(_dask_runner(address))
                count = max(1, sum(runner.client.nthreads().values()))
            workers = Workers(lambda _key, chunk: handed_over(runner.submit(task, {"chunk": chunk})), lambda: count)
        yield workers.count(), partial(map_in_order, workers)
