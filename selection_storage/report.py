"""The JSON Lines report of a run: one explanation object per article, written atomically."""

from __future__ import annotations

import os
from collections.abc import Iterable

import orjson

from selection_core.select import Selection
from selection_storage.atomic import write_atomic


def report_lines(selections: Iterable[Selection]) -> Iterable[bytes]:
    """The JSON Lines report: one explanation object per article."""
    for sel in selections:
        yield orjson.dumps(sel.to_dict()) + b"\n"


def write_report(target: str | os.PathLike[str], selections: Iterable[Selection]) -> None:
    """Write the JSON Lines report atomically."""
    write_atomic(target, report_lines(selections))
