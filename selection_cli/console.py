"""What the terminal shows of a flow run that a command starts (``run``, ``pipeline``).

Prefect's console handlers print every run-log line. When a run fails, the same
error would be printed three or four times (the task's failure, its final state,
the flow's state, then the command's own last line). These helpers leave the
error to the command's last line, keep a bug's traceback, and keep every line in
the run's logs sent to the Prefect API.
"""

from __future__ import annotations

import logging


class OneErrorLine(logging.Filter):
    """On the terminal, leaves out Prefect's run-log lines that the command's last line says anyway.

    Those are the error lines of the run loggers that carry no traceback (a
    refusal, whose traceback :class:`tasks.logs.UserErrorFilter` already
    dropped; a task's "Finished in state Failed"), and the flow's final
    "Finished in state" when it is not Completed. A bug's traceback is kept.
    The run's logs sent to the Prefect API keep every line.
    """

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


def after_the_run(handlers: list[logging.Handler]) -> None:
    """Keep the summary or the error the last line: after the run, Prefect's console shows
    warnings only (not "Stopping temporary server", logged as the process exits)."""
    for handler in handlers:
        handler.setLevel(max(handler.level, logging.WARNING))


def leave_repeated_errors_to_the_last_line() -> list[logging.Handler]:
    """Put :class:`OneErrorLine` on Prefect's console handlers; returns those handlers."""
    from prefect.logging.configuration import ensure_logging_setup
    from prefect.logging.handlers import PrefectConsoleHandler

    from tasks.logs import RUN_LOGGERS

    ensure_logging_setup()
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    consoles = [h for logger in loggers for h in logger.handlers if isinstance(h, PrefectConsoleHandler)]
    for handler in consoles:
        if not any(isinstance(f, OneErrorLine) for f in handler.filters):
            handler.addFilter(OneErrorLine(RUN_LOGGERS))
    return consoles
