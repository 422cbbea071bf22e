"""The logger of the current Prefect run, and the one place that makes a refusal one line in the logs:
:class:`UserErrorFilter` on the run loggers (every record, the API's included), :class:`OneErrorLine` on a
command's console (what its last line says anyway)."""

from __future__ import annotations

import logging
from typing import Any, Final

from prefect import get_run_logger
from prefect.exceptions import MissingContextError
from prefect.logging import get_logger

from selection_core.errors import SelectionError

#: The loggers of Prefect's flow and task runs (whose records go to the API).
RUN_LOGGERS: Final[tuple[str, ...]] = ("prefect.flow_runs", "prefect.task_runs")


def run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    """Prefect's run logger inside a flow or task run; ``prefect.content_selection`` elsewhere."""
    try:
        return get_run_logger()
    except MissingContextError:
        return get_logger("content_selection")


#: What Prefect's engine logs, in a flow-run process, when the run ends Failed (for a refusal: a second copy of the
#: run's one ERROR line, under the run's name, which reads like a crash).
ENGINE_EXIT_MESSAGE: Final[str] = "Engine execution exited with unexpected exception"

#: What Prefect's engines log of a refusal that the run's own line already says: the flow-run process's exit, and
#: a task run's failure (its ``Finished in state Failed(...)`` line stays).
DUPLICATE_MESSAGES: Final[tuple[str, ...]] = (ENGINE_EXIT_MESSAGE, "Task run failed with exception")


class UserErrorFilter(logging.Filter):
    """Drops the traceback of a :class:`SelectionError` (marking the record ``user_error``), Prefect's
    :data:`DUPLICATE_MESSAGES` for one (the run has already said it in one line), and the empty
    ``NoneType: None`` of ``exc_info=True`` outside an exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        if info and isinstance(info[1], SelectionError) and str(record.msg).startswith(DUPLICATE_MESSAGES):
            return False
        if info and (isinstance(info[1], SelectionError) or info == (None, None, None)):
            record.exc_info = None
            record.exc_text = None
            record.user_error = isinstance(info[1], SelectionError)
        return True


class OneErrorLine(logging.Filter):
    """Leaves out the run-log lines that the command's last line says anyway (error lines without a traceback,
    "Finished in state" other than Completed); a bug's traceback is kept, and the API still gets every line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(RUN_LOGGERS):
            return True
        if getattr(record, "user_error", False) or (record.levelno >= logging.ERROR and not record.exc_info):
            return False
        message = record.getMessage()
        return not (message.startswith("Finished in state") and not message.startswith("Finished in state Completed"))


def quiet_user_errors() -> None:
    """Put :class:`UserErrorFilter` on Prefect's run loggers (once)."""
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, UserErrorFilter) for f in logger.filters):
            logger.addFilter(UserErrorFilter())


quiet_user_errors()  # every process that runs a task of this project imports this module
