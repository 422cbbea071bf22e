"""How an expected refusal ends a flow run: Failed, with its one-line message, without a traceback."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from prefect.states import Failed

from selection_core.errors import SelectionError
from tasks.logs import run_logger

F = TypeVar("F", bound=Callable[..., Any])


def refusals_fail_the_run(fn: F) -> F:
    """Decorate a flow function (under ``@flow``): a :class:`SelectionError` ends the run Failed with its message.

    A Python caller still gets the exception (``flow.fn`` returns the state); any other exception propagates.
    """

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SelectionError as error:
            run_logger().error("%s", str(error))
            return Failed(message=str(error), data=error)

    # Prefect validates the parameters against the signature it reads through the wrapper:
    # hand it over with the annotations already resolved in the flow module's namespace.
    run.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return run  # type: ignore[return-value]
