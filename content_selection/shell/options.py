"""The options of every task: retried only where I/O happens, and only when the failure is transient."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from selection_storage.transient import is_transient

if TYPE_CHECKING:
    from prefect import Task
    from prefect.client.schemas.objects import TaskRun
    from prefect.states import State


def retry_on_transient_io(task: Task[Any, Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Prefect ``retry_condition_fn``: retry only when the failure is transient I/O."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as exc:  # noqa: BLE001 - we only classify it
        return is_transient(exc)
    return False


def local_task_options() -> dict[str, Any]:
    """A task that does no I/O a retry may cure: never retried, cached or persisted (inputs are batch-sized)."""
    from prefect.cache_policies import NO_CACHE

    return {"cache_policy": NO_CACHE, "persist_result": False}


def io_task_options() -> dict[str, Any]:
    """A task that reads or writes files: retried 3 times on transient I/O only, never cached or persisted."""
    return {
        "retries": 3,
        "retry_delay_seconds": [1.0, 4.0, 16.0],
        "retry_condition_fn": retry_on_transient_io,
        **local_task_options(),
    }


def api_task_options() -> dict[str, Any]:
    """A task that calls the Prefect API: retried twice on any failure, never cached or persisted."""
    return {"retries": 2, "retry_delay_seconds": 2, **local_task_options()}


def chunk_run_namer(task_name: str) -> Callable[[], str]:
    """A ``task_run_name`` ``<task_name>-000123`` from the ``chunk`` parameter's ``start``, to sort in input order."""

    def name() -> str:
        from prefect.runtime import task_run

        start = getattr(task_run.parameters.get("chunk"), "start", None)
        return f"{task_name}-{start:06d}" if isinstance(start, int) else task_name

    return name
