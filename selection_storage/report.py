"""The JSON Lines report of a run: one explanation object per article, written atomically.

Each line is :func:`selection_core.evidence.report_entry`: ``index``, the article's ``id``
and ``url`` where it has them, then the explanation, so that the report joins to the batch.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from selection_core.evidence import report_entry
from selection_core.select import Selection
from selection_storage.atomic import write_atomic


def report_lines(articles: Sequence[Mapping[str, Any]], selections: Iterable[Selection]) -> Iterable[bytes]:
    """The JSON Lines report: one object per article (``articles[i]`` is the article of the i-th selection)."""
    for article, sel in zip(articles, selections, strict=True):
        yield orjson.dumps(report_entry(article, sel)) + b"\n"


def write_report(
    target: str | os.PathLike[str], articles: Sequence[Mapping[str, Any]], selections: Iterable[Selection]
) -> None:
    """Write the JSON Lines report atomically."""
    write_atomic(target, report_lines(articles, selections))
