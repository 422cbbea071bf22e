"""Where the chunks of a run execute: in-process, on plain worker processes over the cores, or on Dask."""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import logging
import os
import re
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, Final

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


@contextlib.contextmanager
def worker_processes(preload: str) -> Iterator[tuple[int, Callable[..., concurrent.futures.Future[Any]]]]:
    """Plain worker processes, one per core, for work that needs no Prefect; stopped on exit.

    The workers are forks of a server that imported only the module ``preload``, so they start in a fraction of a
    second (a Prefect worker imports Prefect first); the server starts now, and imports it while the caller gets
    its first work ready. Yields the number of workers and ``submit(function, *args)``.
    """
    workers = available_cores()
    context = forkserver_context(preload)
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        if context.get_start_method() == "forkserver":
            from multiprocessing import forkserver

            forkserver.ensure_running()
        yield workers, pool.submit


def map_in_order(submit: Callable[[Any], Any], payloads: Iterable[Any], in_flight: int) -> Iterator[Any]:
    """Run ``submit(payload)`` for each payload, at most ``in_flight`` at a time; yield the results in order.

    A payload given to a Prefect task should be an object Prefect does not walk into. On an early stop or a
    failure (the first failed future's exception is raised), the futures already submitted are waited for.
    """
    pending: deque[Any] = deque()
    try:
        for payload in payloads:
            if len(pending) >= in_flight:
                yield pending.popleft().result()
            pending.append(submit(payload))
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            if isinstance(future, concurrent.futures.Future):
                concurrent.futures.wait([future])
            else:
                future.wait()


#: ``map(chunks)``: the result of each chunk, in the chunks' order.
ChunkMap = Callable[[Iterable[Any]], Iterator[Any]]


@contextlib.contextmanager
def chunk_runner(
    runner_name: TaskRunnerName, address: str | None, function: Callable[[Any], Any], task: Any
) -> Iterator[tuple[int, ChunkMap]]:
    """Where a run's chunks go, the one way both stages hand them out; stopped on exit.

    Yields the number of workers and ``map(chunks)``, which yields ``function(chunk)`` for each chunk in order, with
    :data:`IN_FLIGHT_PER_WORKER` chunks per worker in flight. ``process``: plain worker processes (one per core)
    call ``function``, with no task run per chunk; ``in-process`` and ``dask``: each chunk is a run of ``task``
    (``function`` as a Prefect task, called ``task(chunk=...)``) on the runner.
    """
    if runner_name is TaskRunnerName.PROCESS:
        with worker_processes(function.__module__) as (workers, submit):
            in_flight = IN_FLIGHT_PER_WORKER * workers
            yield workers, lambda chunks: map_in_order(partial(submit, function), chunks, in_flight)
        return
    with contextlib.ExitStack() as stack:
        if runner_name is TaskRunnerName.IN_PROCESS:
            from prefect.context import FlowRunContext

            runner, workers = FlowRunContext.get().task_runner, 1  # type: ignore[union-attr]
        else:
            runner = stack.enter_context(_dask_runner(address))
            workers = max(1, sum(runner.client.nthreads().values()))
        in_flight = IN_FLIGHT_PER_WORKER * workers

        def on_runner(chunks: Iterable[Any]) -> Iterator[Any]:
            return map_in_order(lambda chunk: runner.submit(task, {"chunk": chunk}), chunks, in_flight)

        yield workers, on_runner
