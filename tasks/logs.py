"""The logger of the current Prefect run, or a plain one when a task is called through ``.fn()``."""

from __future__ import annotations

import logging
from typing import Any

from prefect import get_run_logger
from prefect.exceptions import MissingContextError
from prefect.logging import get_logger


def run_logger() -> logging.Logger | logging.LoggerAdapter[Any]:
    """Prefect's run logger inside a flow or task run; ``prefect.content_selection`` elsewhere."""
    try:
        return get_run_logger()
    except MissingContextError:
        return get_logger("content_selection")
