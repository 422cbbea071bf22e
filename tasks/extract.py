"""The tasks of the extract step, each one call into :mod:`selection_extraction`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final
from uuid import UUID

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from content_selection.shell.logs import run_logger
from content_selection.shell.options import api_task_options, chunk_run_namer, io_task_options, local_task_options
from content_selection.shell.progress_artifacts import artifact_progress
from selection_extraction.artifacts import (
    EXTRACTION_PROGRESS_ARTIFACT_KEY,
    EXTRACTION_SUMMARY_ARTIFACT_KEY,
    PAGES_ARTIFACT_KEY,
    extraction_markdown,
    pages_table_description,
    progress_description,
    summary_description,
)
from selection_extraction.extracted import ArticleSpool, ExtractionResult, ExtractionStats, log_extraction
from selection_extraction.extraction import extract_each
from selection_extraction.inbox import InboxScan, prepare_inbox, scan_inbox
from selection_extraction.page_chunks import ChunkExtraction, PageChunk, extract_chunk
from selection_extraction.pages import PageSet, find_pages
from selection_extraction.paths import ExtractPaths, resolve_extract_paths
from selection_extraction.settings import ExtractionSettings
from selection_storage.atomic import WrittenFile
from selection_storage.stores import Location

PAGE_CHUNK_TASK_NAME: Final[str] = "extract-chunk"


@task(name="check-extract-paths", **local_task_options())
def check_extract_paths(
    pages: str,
    output_path: str | None = None,
    data_root: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> ExtractPaths:
    """Resolve and check the run's paths (:func:`~selection_extraction.paths.resolve_extract_paths`)."""
    return resolve_extract_paths(pages, output_path, data_root, storage_options=storage_options)


@task(name="find-pages", **io_task_options())
def find_pages_task(pages: Location, label: str | None = None) -> PageSet:
    """List the pages and web archives of ``pages`` (a directory, a manifest or WARC files); ``label``: the input
    as given."""
    page_set = find_pages(pages, label)
    run_logger().info("Found %s in %s (%s)", page_set.contents(), pages, page_set.kind)
    return page_set


@task(name="extract-pages", **local_task_options())
def extract_pages_task(
    page_set: PageSet, spool: ArticleSpool, time_limit_seconds: float, workers: int | None = None
) -> ExtractionResult:
    """Run the three extractors on every page in worker processes (None: one per core), in page order to ``spool``;
    never retried, a failure is recorded in its article."""
    progress = artifact_progress(EXTRACTION_PROGRESS_ARTIFACT_KEY, progress_description(page_set), start=False)
    settings = ExtractionSettings(time_limit_seconds=time_limit_seconds, workers=workers)
    result = extract_each(page_set, spool.add, settings, progress=progress)
    log_extraction(run_logger(), result.stats)
    return result


@task(name="write-extracted-batch", **io_task_options())
def write_extracted_batch(root: dict[str, Any], spool: ArticleSpool) -> WrittenFile:
    """Write the batch atomically from ``root`` (with an empty ``articles`` list) and the spooled articles
    (a ``*.jsonl`` target as JSON Lines, with its record beside it)."""
    written = WrittenFile(spool.target, *spool.write(root))
    run_logger().info("Wrote %s: %d bytes, sha256 %s", written.path, written.size_bytes, written.sha256)
    return written


@task(name="publish-extraction-artifacts", **api_task_options())
def publish_extraction_artifacts(
    rows: list[dict[str, Any]],
    root: dict[str, Any],
    stats: ExtractionStats,
    *,
    output_path: Path,
    output_sha256: str,
    max_rows: int,
) -> dict[str, UUID]:
    """Create the ``extraction-pages`` table (``rows``: the first ``max_rows`` pages) and ``extraction-summary``."""
    table_id = create_table_artifact(
        table=rows,
        key=PAGES_ARTIFACT_KEY,
        description=pages_table_description(output_path, len(rows), stats, max_rows),
    )
    markdown_id = create_markdown_artifact(
        markdown=extraction_markdown(root, stats, output_path, output_sha256, len(rows), max_rows),
        key=EXTRACTION_SUMMARY_ARTIFACT_KEY,
        description=summary_description(output_path),
    )
    return {PAGES_ARTIFACT_KEY: table_id, EXTRACTION_SUMMARY_ARTIFACT_KEY: markdown_id}


@task(name=PAGE_CHUNK_TASK_NAME, task_run_name=chunk_run_namer(PAGE_CHUNK_TASK_NAME), **local_task_options())
def extract_page_chunk(chunk: PageChunk) -> ChunkExtraction:
    """Extract one chunk of pages with one worker process (never retried)."""
    extraction = extract_chunk(chunk)
    run_logger().debug("Extracted pages %d..%d", chunk.start, chunk.stop - 1)
    return extraction


@task(name="find-new-page-sets", **io_task_options())
def find_new_page_sets(
    inbox: str | None, data_root: str | None, storage_options: dict[str, Any] | None = None
) -> InboxScan:
    """Resolve the inbox (None: ``<data root>/inbox``, created) inside the data root and sort its page sets."""
    return scan_inbox(prepare_inbox(inbox, data_root, storage_options))
