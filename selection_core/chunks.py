"""One chunk of a batch selected: its bytes in; its selected bytes, report lines, counts and shown evidence out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .batch import Summary, apply_selections, summarize
from .dataset import LanguageOf, render_rows
from .evidence import article_row, close_call_entries, report_entry
from .formats import BatchFormat
from .layout import Chunk
from .select import select_article


@dataclass
class SelectedChunk:
    """What a chunk's selection gives: its articles as written, or its dataset rows (``output``), its report lines
    (``report``, None when not asked for), its counts, its scores-table rows and its first close calls."""

    chunk: Chunk
    summary: Summary
    output: bytes | None = None
    report: bytes | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    close_calls: list[dict[str, Any]] = field(default_factory=list)


def select_chunk(
    data: bytes | bytearray,
    source: str,
    chunk: Chunk,
    fmt: BatchFormat,
    table_rows: int = 0,
    close_calls: int = 0,
    with_report: bool = False,
    dataset: LanguageOf | None = None,
) -> SelectedChunk:
    """Parse, validate and select the articles of ``chunk``, from its bytes wrapped as ``fmt`` wraps a chunk; table
    rows for those among the batch's first ``table_rows`` articles, at most ``close_calls`` close calls. The output is
    the articles rendered as ``fmt`` renders them, or with ``dataset`` (a text's language: the engine's model) their
    dataset rows (:func:`render_rows`).

    Raises:
        InvalidBatchError: the first invalid article, named with its place in the file.
    """
    articles = fmt.parse(data, source, chunk)
    selections = [select_article(article, chunk.start + k) for k, article in enumerate(articles)]
    apply_selections({"articles": articles}, selections, start=chunk.start)
    shown = max(0, min(chunk.stop, table_rows) - chunk.start)
    report = None
    if with_report:
        report = b"".join([orjson.dumps(report_entry(a, s)) + b"\n" for a, s in zip(articles, selections)])
    return SelectedChunk(
        chunk,
        summarize(selections),
        fmt.render(articles) if dataset is None else render_rows(articles, selections, dataset),
        report,
        [article_row(articles[i], selections[i]) for i in range(shown)],
        close_call_entries(articles, selections, close_calls),
    )
