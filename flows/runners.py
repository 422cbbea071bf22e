"""Where the mapped tasks of a run execute: in-process, a local process pool, or Dask.

The choice is a flow parameter (``task_runner``, plus ``dask_address``), so the
CLI, the UI's run form and deployments all pick it the same way, at run time.

Why the flow enters the runner itself instead of being called with
``flow.with_options(task_runner=...)``: a deployment's flow object, its
decorator and so its task runner are fixed when the worker loads the
entrypoint, before the run's parameters are known. So the flow keeps its
default runner for its small fixed tasks, and :func:`open_task_runner` builds
the chosen runner from the parameters and enters it (a Prefect ``TaskRunner`` is
a context manager) around the mapped stage only. Tasks submitted to it are
ordinary task runs of the same flow run: Prefect's process pool and
``prefect-dask`` ship the run's context (flow run, settings) with every task.
No subflow is needed, and nothing but small values goes through the API.
``in-process`` maps on the flow's own runner, so a Python caller can still use
``select_content.with_options(task_runner=...)``.

Settings (used when the parameter is left empty, e.g. by a worker's environment):
``CONTENT_SELECTION_TASK_RUNNER`` and ``CONTENT_SELECTION_DASK_ADDRESS``.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final, TypeVar

from selection_core.errors import EXIT_USAGE, SelectionError

#: Environment variable read when the ``task_runner`` parameter is left empty.
TASK_RUNNER_ENV: Final[str] = "CONTENT_SELECTION_TASK_RUNNER"

#: Environment variable read when the ``dask_address`` parameter is left empty.
DASK_ADDRESS_ENV: Final[str] = "CONTENT_SELECTION_DASK_ADDRESS"

#: Workers of the Dask cluster started when no scheduler address is given.
LOCAL_DASK_WORKERS: Final[int] = 2

#: Tasks kept submitted ahead per worker: enough to keep every worker busy while
#: results come back, few enough that the data in flight stays a small multiple
#: of one chunk per worker (a 100k-article batch is never serialized at once).
IN_FLIGHT_PER_WORKER: Final[int] = 2

#: What a scheduler address looks like (also the pattern of the ``dask_address`` flow parameter).
DASK_ADDRESS_PATTERN: Final[str] = r"^tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$"
_DASK_ADDRESS = re.compile(DASK_ADDRESS_PATTERN)

T = TypeVar("T")
R = TypeVar("R")


class TaskRunnerName(enum.StrEnum):
    """The task runners a run can use."""

    IN_PROCESS = "in-process"
    PROCESS = "process"
    DASK = "dask"


class TaskRunnerConfigError(SelectionError):
    """The task runner settings of a run are not usable."""

    exit_code = EXIT_USAGE


def resolve_task_runner(name: str | None, dask_address: str | None) -> tuple[TaskRunnerName, str | None]:
    """The runner and scheduler address a run uses: the parameters, else the settings.

    An address alone implies ``dask``.

    Raises:
        TaskRunnerConfigError: an unknown runner, a malformed address, or an
            address given with another runner.

    >>> resolve_task_runner(None, None)
    (<TaskRunnerName.IN_PROCESS: 'in-process'>, None)
    >>> resolve_task_runner("dask", "tcp://127.0.0.1:8786")
    (<TaskRunnerName.DASK: 'dask'>, 'tcp://127.0.0.1:8786')
    """
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
        check_dask_address(address)
        if runner is not TaskRunnerName.DASK:
            raise TaskRunnerConfigError(
                f"a Dask scheduler address ({address}) was given with the {runner.value} task runner; "
                "choose the dask task runner or leave the address empty"
            )
    return runner, address


def runs_in_chunks(runner: TaskRunnerName, chunk_size: int | None) -> bool:
    """Whether a run maps chunks on a task runner, or does its work in one task in this process.

    One piece only when in-process and no chunk size was asked for.

    >>> runs_in_chunks(TaskRunnerName.IN_PROCESS, None), runs_in_chunks(TaskRunnerName.IN_PROCESS, 10)
    (False, True)
    >>> runs_in_chunks(TaskRunnerName.PROCESS, None)
    True
    """
    return runner is not TaskRunnerName.IN_PROCESS or chunk_size is not None


def check_dask_address(address: str) -> str:
    """Return ``address`` if it is ``tcp://HOST:PORT``, else raise :class:`TaskRunnerConfigError`.

    >>> check_dask_address("tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    """
    match = _DASK_ADDRESS.fullmatch(address)
    if match is None or not 0 < int(address.rsplit(":", 1)[1]) < 65536:
        raise TaskRunnerConfigError(
            f"{address!r} is not a Dask scheduler address; write it as tcp://HOST:PORT (e.g. tcp://127.0.0.1:8786)"
        )
    return address


def local_cluster_kwargs(local_directory: str) -> dict[str, Any]:
    """Settings of the Dask cluster started when no address is given.

    Two worker processes of one thread each (the work is CPU-bound Python),
    bound to the loopback interface, scratch files in ``local_directory``, and
    no dashboard. (The scheduler still serves its small HTTP health endpoint;
    it is moved from the fixed port 8787 to a free loopback port.)
    """
    return {
        "n_workers": LOCAL_DASK_WORKERS,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "scheduler_port": 0,
        "dashboard_address": None,
        "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"},
        "local_directory": local_directory,
    }


def build_task_runner(name: TaskRunnerName | str, dask_address: str | None = None, local_directory: str | None = None):
    """A new, not yet started task runner for ``name`` (None for ``in-process``).

    Args:
        name: ``in-process``, ``process`` or ``dask``.
        dask_address: ``tcp://HOST:PORT`` of a running Dask scheduler; without
            it, ``dask`` starts a local cluster (see :func:`local_cluster_kwargs`).
        local_directory: Scratch directory of a local Dask cluster (default: a
            new folder under the system's temporary directory).

    Returns:
        A Prefect ``TaskRunner``, or None for ``in-process`` (the flow's own runner).
    """
    runner, address = resolve_task_runner(str(name), dask_address)
    if runner is TaskRunnerName.IN_PROCESS:
        return None
    if runner is TaskRunnerName.PROCESS:
        from prefect.task_runners import ProcessPoolTaskRunner

        return ProcessPoolTaskRunner(max_workers=os.cpu_count() or 1)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise TaskRunnerConfigError(
            "the dask task runner needs prefect-dask: pip install 'content-selection[dask]'"
        ) from None
    if address is not None:
        return DaskTaskRunner(address=address)
    directory = local_directory or tempfile.mkdtemp(prefix="content-selection-dask-")
    return DaskTaskRunner(cluster_kwargs=local_cluster_kwargs(directory))


def runner_parallelism(runner: Any) -> int:
    """How many tasks ``runner`` runs at once (1 for the in-process thread pool)."""
    from prefect.task_runners import ProcessPoolTaskRunner

    if isinstance(runner, ProcessPoolTaskRunner):
        return int(getattr(runner, "_max_workers", None) or os.cpu_count() or 1)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return 1
    if isinstance(runner, DaskTaskRunner):
        return max(1, sum(runner.client.nthreads().values()))
    return 1


@contextlib.contextmanager
def _api_reachable_from_workers() -> Iterator[None]:
    """Make the embedded (ephemeral) API reachable from other processes.

    With no ``PREFECT_API_URL``, each process would start an ephemeral API of its
    own. Pointing the setting at the one this process already uses is enough:
    the process pool and Dask ship the run's settings with every task.
    """
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
def open_task_runner(name: str | None, dask_address: str | None = None) -> Iterator[Any]:
    """The started runner a run's mapped tasks go to; stopped (and a local cluster shut down) on exit.

    ``in-process`` yields the current flow run's own runner, not a new one.
    """
    runner_name, address = resolve_task_runner(name, dask_address)
    if runner_name is TaskRunnerName.IN_PROCESS:
        from prefect.context import FlowRunContext

        context = FlowRunContext.get()
        if context is None or context.task_runner is None:
            raise RuntimeError("open_task_runner('in-process') must be called inside a flow run")
        yield context.task_runner
        return
    with contextlib.ExitStack() as stack:
        local_directory = None
        if runner_name is TaskRunnerName.DASK and address is None:
            local_directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="content-selection-dask-"))
        stack.enter_context(_api_reachable_from_workers())
        runner = build_task_runner(runner_name, address, local_directory)
        yield stack.enter_context(runner)


def map_in_order(runner: Any, task: Any, payloads: Iterable[T], parameter: str, in_flight: int) -> Iterator[Any]:
    """Run ``task`` once per payload on ``runner``; yield the results in payload order.

    At most ``in_flight`` tasks are submitted and not yet collected, so payloads are built
    (``payloads`` may be a generator) and shipped only as workers free up, and a result is let
    go once the caller moves on. A payload should be an object Prefect does not walk into
    (not a list, dict, dataclass or model). When the caller stops early or a task fails, the
    tasks already submitted are waited for.

    Raises:
        The first failed task's exception.
    """
    if in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, got {in_flight}")
    pending: deque[Any] = deque()
    try:
        for payload in payloads:
            if len(pending) >= in_flight:
                yield pending.popleft().result()
            pending.append(runner.submit(task, {parameter: payload}))
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.wait()


def for_each_in_order(
    runner: Any,
    task: Any,
    payloads: Iterable[T],
    parameter: str,
    in_flight: int,
    on_result: Callable[[int, Any], None],
) -> int:
    """:func:`map_in_order`, handing each result to ``on_result(i, result)`` and keeping none; the count."""
    count = 0
    for count, result in enumerate(map_in_order(runner, task, payloads, parameter, in_flight), 1):
        on_result(count - 1, result)
    return count
