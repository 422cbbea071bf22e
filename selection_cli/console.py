"""What the terminal shows of a flow run that a command starts: each error once, on the command's last line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def errors_left_to_the_last_line() -> Iterator[None]:
    """Around a flow run: :class:`~content_selection.shell.logs.OneErrorLine` on Prefect's console handlers,
    then warnings only, so that the summary or the error stays the last line."""
    from prefect.logging.configuration import ensure_logging_setup
    from prefect.logging.handlers import PrefectConsoleHandler

    from content_selection.shell.logs import OneErrorLine

    ensure_logging_setup()
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    consoles = [h for logger in loggers for h in logger.handlers if isinstance(h, PrefectConsoleHandler)]
    for handler in consoles:
        if not any(isinstance(f, OneErrorLine) for f in handler.filters):
            handler.addFilter(OneErrorLine())
    try:
        yield
    finally:
        for handler in consoles:
            handler.setLevel(max(handler.level, logging.WARNING))
