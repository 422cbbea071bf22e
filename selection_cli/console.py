"""What the terminal shows of a flow run that a command starts: each error once, on the command's last line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class OneErrorLine(logging.Filter):
    """Leaves out the run-log lines that the command's last line says anyway (error lines without a traceback,
    "Finished in state" other than Completed); a bug's traceback is kept, and the API still gets every line."""

    def __init__(self, run_loggers: tuple[str, ...]) -> None:
        super().__init__()
        self._run_loggers = run_loggers

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self._run_loggers):
            return True
        if getattr(record, "user_error", False) or (record.levelno >= logging.ERROR and not record.exc_info):
            return False
        message = record.getMessage()
        return not (message.startswith("Finished in state") and not message.startswith("Finished in state Completed"))


@contextmanager
def errors_left_to_the_last_line() -> Iterator[None]:
    """Around a flow run: :class:`OneErrorLine` on Prefect's console handlers, then warnings only, so that the
    summary or the error stays the last line."""
    from content_selection.tasks.logs import RUN_LOGGERS
    from prefect.logging.configuration import ensure_logging_setup
    from prefect.logging.handlers import PrefectConsoleHandler

    ensure_logging_setup()
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    consoles = [h for logger in loggers for h in logger.handlers if isinstance(h, PrefectConsoleHandler)]
    for handler in consoles:
        if not any(isinstance(f, OneErrorLine) for f in handler.filters):
            handler.addFilter(OneErrorLine(RUN_LOGGERS))
    try:
        yield
    finally:
        for handler in consoles:
            handler.setLevel(max(handler.level, logging.WARNING))
