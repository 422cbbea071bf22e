"""How an expected refusal ends a flow run: Failed, with its one-line message, without a traceback.

When a flow raises, Prefect logs "Encountered exception during execution" with
the traceback and makes the state message "Flow run encountered an exception:
...". For a refusal the user can fix (the
:class:`~selection_core.errors.SelectionError` family) that buries the one
line that matters, so :func:`refusals_fail_the_run` catches it, logs the
message, and returns a ``Failed`` state whose message is that line and whose
data is the exception. Prefect documents returning a state as the way a flow
chooses its final state. A Python caller of the flow still gets the exception
itself, with its type and ``exit_code`` (the engine raises the exception held
by a returned Failed state), and ``return_state=True`` gives that state.
Any other exception, a bug, propagates as before, traceback included.
(``flow.fn(...)``, which bypasses the engine, returns that Failed state instead.)

(The traceback of the task that raised the refusal is dropped by
:class:`tasks.logs.UserErrorFilter`.)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from prefect.states import Failed

from selection_core.errors import SelectionError
from tasks.logs import run_logger

F = TypeVar("F", bound=Callable[..., Any])


def refused(error: SelectionError) -> Any:
    """Log ``error``'s message and return the ``Failed`` state that ends the run with it."""
    message = str(error)
    run_logger().error("%s", message)
    return Failed(message=message, data=error)


def refusals_fail_the_run(fn: F) -> F:
    """Decorate a flow function (under ``@flow``): a :class:`SelectionError` ends the run
    Failed with its message (see the module docstring); the signature is kept for the form."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SelectionError as error:
            return refused(error)

    # Prefect validates the parameters against the signature it reads through the wrapper;
    # hand it over with the annotations already resolved in the flow module's namespace.
    run.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return run  # type: ignore[return-value]
