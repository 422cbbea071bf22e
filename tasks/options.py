"""The options of every task, in one place: retried only where I/O happens, and only when the failure is transient.

A retry can cure a flaky disk or a network filesystem that blinked (``EIO``,
``EAGAIN``...). It cannot cure a batch that is not JSON, an output path that is
refused, or a file that does not exist: those fail on the first try so that the
person who has to fix them hears about it at once. Which errors are transient is
decided by one policy, :mod:`selection_storage.transient` (an allow-list of errno values).

* :func:`io_task_options`: a task that reads or writes files;
* :func:`api_task_options`: a task that calls the Prefect API (artifacts);
* :func:`local_task_options`: a task that does no I/O worth retrying (never retried).

No task computes a cache key or persists its result: their inputs and outputs
are as large as a batch, or are paths whose files change between runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from selection_storage.transient import is_transient_io_error

if TYPE_CHECKING:
    from prefect import Task
    from prefect.client.schemas.objects import TaskRun
    from prefect.states import State

__all__ = [
    "API_RETRIES",
    "API_RETRY_DELAY",
    "IO_RETRIES",
    "IO_RETRY_DELAYS",
    "api_task_options",
    "chunk_run_namer",
    "io_task_options",
    "is_transient_io_error",
    "local_task_options",
    "retry_on_transient_io",
]

#: How many times a task whose failure is transient is tried again.
IO_RETRIES: Final[int] = 3

#: Seconds to wait before each retry (backoff).
IO_RETRY_DELAYS: Final[list[float]] = [1.0, 4.0, 16.0]

#: How many times a task that calls the Prefect API is tried again, and the seconds between tries.
API_RETRIES: Final[int] = 2
API_RETRY_DELAY: Final[int] = 2


def retry_on_transient_io(task: Task[Any, Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Prefect ``retry_condition_fn``: retry only when the failure is transient I/O."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as exc:  # noqa: BLE001 - we only classify it
        return is_transient_io_error(exc)
    return False


def local_task_options() -> dict[str, Any]:
    """The options of a task that does no I/O a retry may cure: never retried, cached or persisted."""
    from prefect.cache_policies import NO_CACHE

    return {"cache_policy": NO_CACHE, "persist_result": False}


def io_task_options() -> dict[str, Any]:
    """The options of a task whose inputs or outputs are as large as a batch and whose
    failures a retry may cure: retried on transient I/O only, never cached or persisted."""
    return {
        "retries": IO_RETRIES,
        "retry_delay_seconds": IO_RETRY_DELAYS,
        "retry_condition_fn": retry_on_transient_io,
        **local_task_options(),
    }


def api_task_options() -> dict[str, Any]:
    """The options of a task that calls the Prefect API: retried on any failure, never cached or persisted."""
    return {"retries": API_RETRIES, "retry_delay_seconds": API_RETRY_DELAY, **local_task_options()}


def chunk_run_namer(task_name: str) -> Callable[[], str]:
    """A ``task_run_name`` for a task whose ``chunk`` parameter has a ``start``:
    ``<task_name>-000123``, so the runs of one flow sort in input order."""

    def name() -> str:
        from prefect.runtime import task_run

        start = getattr(task_run.parameters.get("chunk"), "start", None)
        return f"{task_name}-{start:06d}" if isinstance(start, int) else task_name

    return name
