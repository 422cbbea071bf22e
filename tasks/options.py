"""When a failed task is worth another try: transient I/O errors only.

A retry can cure a flaky disk or a network filesystem that blinked (``EIO``,
``EAGAIN``...). It cannot cure a batch that is not JSON, an output path that is
refused, or a file that does not exist: those fail on the first try so that the
person who has to fix them hears about it at once.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from selection_core.errors import InvalidBatchError, OutputPathError, SelectionError

if TYPE_CHECKING:
    from prefect import Task
    from prefect.client.schemas.objects import TaskRun
    from prefect.states import State

#: How many times a task whose failure is transient is tried again.
IO_RETRIES: Final[int] = 3

#: Seconds to wait before each retry (backoff).
IO_RETRY_DELAYS: Final[list[float]] = [1.0, 4.0, 16.0]

#: ``errno`` values that no retry can cure. Any other ``OSError`` is taken as transient.
PERMANENT_ERRNOS: Final[frozenset[int]] = frozenset(
    {
        errno.ENOENT,
        errno.EACCES,
        errno.EPERM,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.EROFS,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EEXIST,
        errno.EINVAL,
        errno.EXDEV,
    }
)


def is_transient_io_error(exc: BaseException) -> bool:
    """Tell whether another try may succeed where ``exc`` failed.

    Args:
        exc: The exception a task raised.

    Returns:
        True for transient I/O errors (the core's ``ReadError``, a ``WriteError``
        marked transient, or a plain ``OSError`` whose errno is not known to be
        permanent); False for everything else, and always False for
        ``InvalidBatchError`` and ``OutputPathError``.

    Example:
        >>> import errno
        >>> is_transient_io_error(OSError(errno.EIO, "Input/output error"))
        True
        >>> is_transient_io_error(ValueError("not JSON"))
        False
    """
    if isinstance(exc, (InvalidBatchError, OutputPathError)):
        return False
    if not isinstance(exc, OSError):
        return False
    if isinstance(exc, SelectionError):
        return bool(getattr(exc, "transient", False))
    return exc.errno not in PERMANENT_ERRNOS


def retry_on_transient_io(task: Task[Any, Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Prefect ``retry_condition_fn``: retry only when the failure is transient I/O."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as exc:  # noqa: BLE001 - we only classify it
        return is_transient_io_error(exc)
    return False


def io_task_options() -> dict[str, Any]:
    """The options of a task whose inputs or outputs are as large as a batch and whose
    failures a retry may cure: retried on transient I/O only, never cached or persisted."""
    from prefect.cache_policies import NO_CACHE

    return {
        "retries": IO_RETRIES,
        "retry_delay_seconds": IO_RETRY_DELAYS,
        "retry_condition_fn": retry_on_transient_io,
        "cache_policy": NO_CACHE,
        "persist_result": False,
    }


def chunk_run_namer(task_name: str) -> Callable[[], str]:
    """A ``task_run_name`` for a task whose ``chunk`` parameter has a ``start``:
    ``<task_name>-000123``, so the runs of one flow sort in input order."""

    def name() -> str:
        from prefect.runtime import task_run

        start = getattr(task_run.parameters.get("chunk"), "start", None)
        return f"{task_name}-{start:06d}" if isinstance(start, int) else task_name

    return name
