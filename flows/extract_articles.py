"""The ``extract-articles`` flow: web pages in, an extracted batch out, then the completion event.

check paths -> find pages -> extract (three extractors, worker processes) ->
write the batch atomically -> artifacts -> emit ``content-selection.batch.extracted``
(:func:`flows.events.emit_batch_extracted`), the upstream side of the contract
of the Prefect stage: the ``select-content/triggered`` deployment starts a
selection run on the batch just written. The event is emitted only after the
batch is completely in place, and only when the run succeeded.

All extraction logic lives in :mod:`tasks.extraction`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final

from prefect import flow
from prefect.runtime import flow_run
from prefect.utilities.annotations import opaque
from pydantic import BaseModel, Field

from flows.events import emit_batch_extracted
from tasks.extract import (
    check_extract_paths,
    extract_pages_task,
    find_pages_task,
    publish_extraction_artifacts,
    write_extracted_batch,
)
from tasks.extraction import DEFAULT_TIME_LIMIT_SECONDS
from tasks.logs import run_logger

#: Default number of rows of the ``extraction-pages`` table.
DEFAULT_MAX_TABLE_ROWS: Final[int] = 200

#: Largest accepted ``max_table_rows``.
MAX_TABLE_ROWS_LIMIT: Final[int] = 5000

#: Longest accepted time limit per extractor and page (one hour).
MAX_TIME_LIMIT_SECONDS: Final[float] = 3600.0


class ExtractionRunSummary(BaseModel):
    """What one ``extract-articles`` run did (the flow's return value)."""

    pages_path: str = Field(description="The pages that were read (directory or manifest).")
    output_path: str = Field(description="The extracted batch that was written.")
    articles: int = Field(description="Number of articles (one per page).")
    unreadable_pages: int = Field(description="Pages that could not be read at all.")
    errors: dict[str, int] = Field(description="Articles whose block has an error, per extractor.")
    timeouts: dict[str, int] = Field(description="Extractor calls stopped by the time limit, per extractor.")
    output_sha256: str = Field(description="SHA-256 of the batch bytes.")
    event_emitted: bool = Field(description="Whether the batch-extracted event was sent.")

    def one_line(self) -> str:
        errors = ", ".join(f"{name} {count}" for name, count in self.errors.items())
        return f"extracted {self.articles} pages (errors: {errors}) -> {self.output_path}"


def _run_name() -> str:
    name = Path(str(flow_run.parameters.get("pages", "pages"))).name
    return f"extract-{name}"


@flow(
    name="extract-articles",
    flow_run_name=_run_name,
    description="Extract every page with trafilatura, newspaper4k and readability into a batch, then announce it.",
    validate_parameters=True,
)
def extract_articles(
    pages: Annotated[str, Field(min_length=1)],
    output_path: str | None = None,
    time_limit_seconds: Annotated[float, Field(gt=0, le=MAX_TIME_LIMIT_SECONDS)] = DEFAULT_TIME_LIMIT_SECONDS,
    workers: Annotated[int | None, Field(ge=1)] = None,
    max_table_rows: Annotated[int, Field(ge=0, le=MAX_TABLE_ROWS_LIMIT)] = DEFAULT_MAX_TABLE_ROWS,
    data_root: str | None = None,
    emit_event: bool = True,
) -> ExtractionRunSummary:
    """Extract the article text of every page with the three extractors and write the batch.

    Args:
        pages: A folder of `.html`, `.htm` or `.html.gz` pages (searched
            recursively), or a JSON Lines manifest with one
            `{"id": ..., "url": ..., "path": ...}` per line, e.g. `/data/pages/2024-05-01`.
        output_path: Where to write the batch. Leave empty for
            `<pages>_extracted.json` beside the input (the name the scheduled
            selection looks for).
        time_limit_seconds: Seconds one extractor may spend on one page; an
            extractor that overruns is stopped and its block gets a TimeoutError.
        workers: Worker processes. Leave empty for one per CPU core.
        max_table_rows: Most rows shown in the `extraction-pages` table artifact.
        data_root: Directory that the pages and the output must resolve inside.
            Leave empty to use CONTENT_SELECTION_DATA_ROOT; with neither, paths
            are not confined. The triggered selection only accepts batches inside it.
        emit_event: Announce the batch with the `content-selection.batch.extracted`
            event when it is written, so that the triggered selection deployment
            selects it.

    Returns:
        A summary: paths, article and error counts, SHA-256 of the batch.
    """
    logger = run_logger()
    paths = check_extract_paths(pages, output_path, data_root)
    page_set = find_pages_task(paths.pages, label=pages)
    result = extract_pages_task(page_set, time_limit_seconds, workers)
    written = write_extracted_batch(opaque(result.doc), paths.output)
    publish_extraction_artifacts(
        opaque(result.doc),
        result.stats,
        output_path=written.path,
        output_sha256=written.sha256,
        max_rows=max_table_rows,
    )
    if emit_event:
        emit_batch_extracted(written.path, articles=result.stats.pages, sha256=written.sha256)
        logger.info("Announced %s (content-selection.batch.extracted)", written.path)
    summary = ExtractionRunSummary(
        pages_path=str(paths.pages),
        output_path=str(written.path),
        articles=result.stats.pages,
        unreadable_pages=result.stats.unreadable_pages,
        errors=dict(result.stats.errors),
        timeouts=dict(result.stats.timeouts),
        output_sha256=written.sha256,
        event_emitted=emit_event,
    )
    logger.info(summary.one_line())
    return summary
