"""The ``extract-articles`` flow: web pages in, an extracted batch out, then ``content-selection.batch.extracted``."""

from __future__ import annotations

from typing import Annotated

from prefect import flow, task
from prefect.utilities.annotations import opaque
from pydantic import BaseModel, Field

from content_selection.shell.credentials import with_credentials
from content_selection.shell.ended import RUN_END_HOOKS
from content_selection.shell.events import emit_batch_extracted
from content_selection.shell.logs import run_logger
from content_selection.shell.options import api_task_options
from content_selection.shell.params import (
    DEFAULT_MAX_TABLE_ROWS,
    CredentialsBlock,
    DaskAddress,
    OptionalCount,
    OptionalText,
    StorageOptions,
    TableRows,
    TaskRunnerChoice,
    TimeLimit,
    run_namer,
)
from content_selection.shell.progress_artifacts import artifact_progress
from content_selection.shell.refusals import refusals_fail_the_run
from content_selection.shell.runners import TaskRunnerName, chunk_runner, resolve_task_runner
from content_selection.tasks.extract import (
    check_extract_paths,
    extract_page_chunk,
    extract_pages_task,
    find_pages_task,
    publish_extraction_artifacts,
    write_extracted_batch,
)
from selection_core.evidence import counts_text
from selection_extraction import (
    DEFAULT_TIME_LIMIT_SECONDS,
    ExtractionResult,
    ExtractPaths,
    PageSet,
    default_extractors,
    record_path,
)
from selection_extraction.artifacts import EXTRACTION_PROGRESS_ARTIFACT_KEY, PageRows, progress_description
from selection_extraction.extracted import NO_STATS, ArticleSpool, log_extraction
from selection_extraction.page_chunks import extract_chunk, joined_root, page_chunks, spool_chunk
from selection_extraction.pages import PageReadings
from selection_storage.atomic import WrittenFile


class ExtractionRunSummary(BaseModel):
    """What one ``extract-articles`` run did (the flow's return value)."""

    pages_path: str = Field(description="The pages that were read (directory, manifest or WARC file).")
    output_path: str = Field(description="The extracted batch that was written.")
    record_path: str | None = Field(default=None, description="For a .jsonl batch, the record of how it was made.")
    articles: int = Field(description="Number of articles (one per page).")
    unreadable_pages: int = Field(description="Pages that could not be read at all.")
    errors: dict[str, int] = Field(description="Articles whose block has an error, per extractor.")
    timeouts: dict[str, int] = Field(description="Extractor calls stopped by the time limit, per extractor.")
    output_sha256: str = Field(description="SHA-256 of the batch bytes.")
    event_emitted: bool = Field(description="Whether the batch-extracted event was sent.")

    def one_line(self) -> str:
        errors = counts_text(self.errors)
        return f"extracted {self.articles} pages (errors: {errors}) -> {self.output_path}"


def _unshown(_done: int, _total: int) -> None:
    """The progress of a run outside Prefect with no follower: shown nowhere."""


def extract_in_chunks(
    page_set: PageSet,
    spool: ArticleSpool,
    time_limit_seconds: float,
    pages_per_chunk: int | None,
    runner_name: TaskRunnerName,
    dask_address: str | None,
) -> ExtractionResult:
    """Extract the pages chunk by chunk on the chosen runner, in order into ``spool``."""
    logger = run_logger()
    extractors = default_extractors()  # fails early, here, when the libraries are missing
    readings = PageReadings(page_set, read_files=False)  # a page file is read where its chunk is extracted
    with chunk_runner(runner_name, dask_address, extract_chunk, extract_page_chunk) as (workers, map_chunks):
        description = progress_description(page_set, chunked=True)
        progress = artifact_progress(EXTRACTION_PROGRESS_ARTIFACT_KEY, description, start=False) or _unshown
        pages, total = 0, NO_STATS
        progress(pages, readings.expected())  # the pages done of those expected, as chunks end in order
        logger.info("Extracting in chunks on the %s task runner (%d worker(s))", runner_name.value, workers)
        chunks = page_chunks(readings, pages_per_chunk, workers, time_limit_seconds)
        for part in map_chunks(chunks):  # only the chunks in flight are held
            pages += part.pages
            progress(pages, max(pages, readings.expected()))
            spool_chunk(spool, part)
            total += part.stats
        progress(pages, max(pages, readings.expected()))  # every page, now that all are counted
    result = joined_root(readings, total, extractors, time_limit_seconds)
    log_extraction(logger, result.stats)
    return result


def extract_and_write(
    paths: ExtractPaths,
    label: str,
    time_limit_seconds: float,
    workers: int | None,
    pages_per_chunk: int | None,
    runner: tuple[TaskRunnerName, str | None],
    max_table_rows: int,
) -> tuple[ExtractionResult, WrittenFile]:
    """Find, extract and write the pages, and publish the artifacts; the run's counts and the written batch."""
    runner_name, address = runner
    page_set = find_pages_task(paths.pages, label=label)
    rows = PageRows(max_table_rows)
    with ArticleSpool(paths.output, watch=rows) as spool:
        if runner_name is TaskRunnerName.IN_PROCESS and pages_per_chunk is None:
            result = extract_pages_task(page_set, spool, time_limit_seconds, workers)
        else:
            result = extract_in_chunks(page_set, spool, time_limit_seconds, pages_per_chunk, runner_name, address)
        written = write_extracted_batch(opaque(result.doc), spool)
    publish_extraction_artifacts(
        opaque(rows.rows),
        opaque(result.doc),
        result.stats,
        output_path=written.path,
        output_sha256=written.sha256,
        max_rows=max_table_rows,
    )
    return result, written


@task(name="announce-batch", **api_task_options())
def announce_batch(path: str, articles: int, sha256: str) -> None:
    """Emit ``content-selection.batch.extracted`` for the written batch; a server that does not confirm it fails
    the task, whose retries emit it again (then the run fails, and the scheduled scan selects the batch)."""
    emit_batch_extracted(path, articles=articles, sha256=sha256)


@flow(
    name="extract-articles",
    flow_run_name=run_namer("extract", "pages", "pages"),
    description="Extract every page with trafilatura, newspaper4k and readability into a batch, then announce it.",
    validate_parameters=True,
    **RUN_END_HOOKS,
)
@refusals_fail_the_run
def extract_articles(
    pages: Annotated[str, Field(min_length=1)],
    output_path: OptionalText = None,
    time_limit_seconds: TimeLimit = DEFAULT_TIME_LIMIT_SECONDS,
    workers: OptionalCount = None,
    max_table_rows: TableRows = DEFAULT_MAX_TABLE_ROWS,
    data_root: OptionalText = None,
    emit_event: bool = True,
    task_runner: TaskRunnerChoice = None,
    dask_address: DaskAddress = None,
    pages_per_chunk: OptionalCount = None,
    storage_options: StorageOptions = None,
    credentials_block: CredentialsBlock = None,
) -> ExtractionRunSummary:
    """Extract the article text of every page with the three extractors and write the batch.

    Args:
        pages: A folder of `.html`, `.htm`, `.html.gz` pages and `.warc`/`.warc.gz` archives (searched recursively),
            a WARC file, or a JSON Lines manifest of `{"id": ..., "url": ..., "path": ...}`; each may be in a store
            (`s3://BUCKET/PREFIX`: a prefix is a folder).
        output_path: Where to write the batch. Empty: `<pages>_extracted.json` beside the input; `.jsonl`: JSON Lines.
        time_limit_seconds: Seconds one extractor may spend on one page before it is stopped (TimeoutError).
        workers: Worker processes; 0 for one per CPU core.
        max_table_rows: Most rows of the `extraction-pages` table artifact.
        data_root: Directory every path must resolve inside. Empty: CONTENT_SELECTION_DATA_ROOT, else unconfined.
        emit_event: Announce the batch (`content-selection.batch.extracted`) to the triggered selection.
        task_runner: Where the pages are extracted: `in-process`, `process` or `dask`. Empty:
            CONTENT_SELECTION_TASK_RUNNER, else `dask` with an address, else `in-process`.
        dask_address: A Dask scheduler, `tcp://HOST:PORT`. Empty: CONTENT_SELECTION_DASK_ADDRESS, else a local cluster.
        pages_per_chunk: Pages per chunk (one task run each); 0 for one task in-process, else about 2 per worker.
        storage_options: Options of the object store of `s3://`, `gs://`, `az://` paths (an endpoint, a region);
            credentials are best left to the environment, an instance role or `credentials_block`.
        credentials_block: A Prefect `Secret` block whose value, a JSON object of storage options (e.g. `{"key": ...,
            "secret": ...}`), is merged into `storage_options` when the run starts (the block's value wins on a
            clash); only its name is stored with the run. Empty: none.
    """
    logger = run_logger()
    storage_options = with_credentials(storage_options, credentials_block)
    paths = check_extract_paths(pages, output_path, data_root, storage_options)
    runner = resolve_task_runner(task_runner, dask_address)
    result, written = extract_and_write(
        paths, pages, time_limit_seconds, workers, pages_per_chunk, runner, max_table_rows
    )
    if emit_event:
        announce_batch(str(written.path), result.stats.pages, written.sha256)
        logger.info("Announced %s (content-selection.batch.extracted, confirmed by the server)", written.path)
    record = record_path(written.path)
    summary = ExtractionRunSummary(
        pages_path=str(paths.pages),
        output_path=str(written.path),
        record_path=None if record is None else str(record),
        articles=result.stats.pages,
        unreadable_pages=result.stats.unreadable_pages,
        errors=dict(result.stats.errors),
        timeouts=dict(result.stats.timeouts),
        output_sha256=written.sha256,
        event_emitted=emit_event,
    )
    logger.info(summary.one_line())
    return summary
