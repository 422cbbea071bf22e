"""How an expected refusal ends a flow run: Failed, with its one-line message, without a traceback."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from prefect.states import Failed

from content_selection.shell.logs import run_logger
from selection_core.errors import SelectionError

F = TypeVar("F", bound=Callable[..., Any])


def refusals_fail_the_run(fn: F) -> F:
    """Decorate a flow function (under ``@flow``): a :class:`SelectionError` ends the run Failed with its message."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SelectionError as error:
            run_logger().error("%s", str(error))
            return Failed(message=str(error), data=error)

    # Prefect reads the signature through the wrapper: give it with the annotations resolved in the flow's module.
    run.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return run  # type: ignore[return-value]
