"""The parameters and limits the flows share, and how their runs are named.

One place for each: the run form of every deployment, the command line and the
flows read the same defaults and bounds from here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

#: Default number of rows of a table artifact (``selection-scores``, ``extraction-pages``).
DEFAULT_MAX_TABLE_ROWS: Final[int] = 200

#: Largest accepted ``max_table_rows`` (a table artifact is meant to be read in a browser).
MAX_TABLE_ROWS_LIMIT: Final[int] = 5000

#: Longest accepted time limit per extractor and page (one hour).
MAX_TIME_LIMIT_SECONDS: Final[float] = 3600.0


def run_namer(prefix: str, parameter: str, default: str) -> Callable[[], str]:
    """A ``flow_run_name``: ``<prefix>-<file name of the parameter's path>``.

    >>> callable(run_namer("select", "input_path", "batch"))
    True
    """

    def name() -> str:
        from prefect.runtime import flow_run

        return f"{prefix}-{Path(str(flow_run.parameters.get(parameter, default))).name}"

    return name
