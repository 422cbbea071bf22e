"""The ``extract-and-select`` flow: web pages in, the extracted and the selected batch out, in one run."""

from __future__ import annotations

from typing import Annotated

from prefect import flow
from pydantic import BaseModel, Field

from content_selection.flows.extract_articles import extract_and_write
from content_selection.flows.select_content import publish_selection, select_on
from content_selection.shell.credentials import with_credentials
from content_selection.shell.ended import RUN_END_HOOKS
from content_selection.shell.logs import run_logger
from content_selection.shell.params import (
    DEFAULT_MAX_TABLE_ROWS,
    DEFAULT_OUTPUT_FORMAT,
    CredentialsBlock,
    DaskAddress,
    OptionalCount,
    OptionalText,
    OutputFormat,
    StorageOptions,
    TableRows,
    TaskRunnerChoice,
    TimeLimit,
    run_namer,
)
from content_selection.shell.refusals import refusals_fail_the_run
from content_selection.shell.runners import TaskRunnerName, resolve_task_runner
from content_selection.tasks.extract import check_extract_paths
from content_selection.tasks.selection import check_paths
from selection_core.evidence import counts_text
from selection_extraction import DEFAULT_TIME_LIMIT_SECONDS


class PipelineRunSummary(BaseModel):
    """What one ``extract-and-select`` run did (the flow's return value)."""

    pages_path: str = Field(description="The pages that were read.")
    extracted_path: str = Field(description="The extracted batch written.")
    output_path: str = Field(description="The selected batch (or the dataset) written.")
    report_path: str | None = Field(default=None, description="The JSON Lines report, if written.")
    articles: int = Field(description="Number of articles (one per page).")
    unreadable_pages: int = Field(default=0, description="Pages that could not be read at all.")
    warc_records: dict[str, int] | None = Field(default=None, description="The input's WARC records by kind, if any.")
    errors: dict[str, int] = Field(description="Articles whose block has an error, per extractor.")
    timeouts: dict[str, int] = Field(default_factory=dict, description="Extractor calls stopped by the time limit.")
    by_extractor: dict[str, int] = Field(description="Selections per extractor.")
    by_reason: dict[str, int] = Field(default_factory=dict, description="Decisions per reason code.")
    by_pool: dict[str, int] = Field(default_factory=dict, description="Decisions per candidate pool.")
    extracted_sha256: str = Field(description="SHA-256 of the extracted batch.")
    output_sha256: str = Field(description="SHA-256 of the selected batch.")

    def one_line(self) -> str:
        counts = counts_text(self.by_extractor)
        return f"extracted and selected {self.articles} pages ({counts}) -> {self.output_path}"


@flow(
    name="extract-and-select",
    flow_run_name=run_namer("extract-and-select", "pages", "pages"),
    description="Extract every page with the three extractors, then select the best text of each, in one run.",
    validate_parameters=True,
    **RUN_END_HOOKS,
)
@refusals_fail_the_run
def extract_and_select(
    pages: Annotated[str, Field(min_length=1)],
    extracted_path: OptionalText = None,
    output_path: OptionalText = None,
    report_path: OptionalText = None,
    time_limit_seconds: TimeLimit = DEFAULT_TIME_LIMIT_SECONDS,
    workers: OptionalCount = None,
    max_table_rows: TableRows = DEFAULT_MAX_TABLE_ROWS,
    data_root: OptionalText = None,
    task_runner: TaskRunnerChoice = None,
    dask_address: DaskAddress = None,
    pages_per_chunk: OptionalCount = None,
    storage_options: StorageOptions = None,
    credentials_block: CredentialsBlock = None,
    output_format: OutputFormat = DEFAULT_OUTPUT_FORMAT,
) -> PipelineRunSummary:
    """Extract the article text of every page, then pick the best extractor of each article; no event is emitted.

    Args:
        pages: A folder of pages and web archives (searched recursively), a WARC file, or a JSON Lines manifest;
            each may be in a store (`s3://BUCKET/PREFIX`: a prefix is a folder).
        extracted_path: Where to write the extracted batch. Empty: `<pages>_extracted.json` beside the input.
        output_path: Where to write the output. Empty: `<extracted stem>_selected.json` (`.parquet` for the
            dataset) beside it.
        report_path: Optional file for the per-article explanation as JSON Lines. Empty: no report.
        time_limit_seconds: Seconds one extractor may spend on one page before it is stopped (TimeoutError).
        workers: Worker processes; 0 for one per CPU core.
        max_table_rows: Most rows of each table artifact (`extraction-pages`, `selection-scores`).
        data_root: Directory every path must resolve inside. Empty: CONTENT_SELECTION_DATA_ROOT, else unconfined.
        task_runner: Where the pages are extracted, as in `extract-articles`; the selection runs in this process.
        dask_address: A Dask scheduler, `tcp://HOST:PORT`. Empty: CONTENT_SELECTION_DASK_ADDRESS, else a local cluster.
        pages_per_chunk: Pages per chunk (one task run each); 0 for one task in-process, else about 2 per worker.
        storage_options: Options of the object store of `s3://`, `gs://`, `az://` paths (an endpoint, a region);
            credentials are best left to the environment, an instance role or `credentials_block`.
        credentials_block: A Prefect `Secret` block whose value, a JSON object of storage options (e.g. `{"key": ...,
            "secret": ...}`), is merged into `storage_options` when the run starts (the block's value wins on a
            clash); only its name is stored with the run. Empty: none.
        output_format: `batch`: the selected batch; `dataset`: Parquet, one row per article with the selected text.
    """
    logger = run_logger()
    storage_options = with_credentials(storage_options, credentials_block)
    extract_paths = check_extract_paths(pages, extracted_path, data_root, storage_options)
    select_paths = check_paths(  # the extracted batch is written below, before it is read
        str(extract_paths.output),
        output_path,
        report_path,
        data_root,
        storage_options=storage_options,
        input_exists=False,
        output_format=output_format,
    )

    runner = resolve_task_runner(task_runner, dask_address)
    extraction, extracted = extract_and_write(
        extract_paths, pages, time_limit_seconds, workers, pages_per_chunk, runner, max_table_rows
    )
    selected, read_as = select_on(select_paths, max_table_rows, None, TaskRunnerName.IN_PROCESS, None)
    publish_selection(selected, read_as, max_table_rows)

    stats, summary = extraction.stats, selected.summary
    run_summary = PipelineRunSummary(
        pages_path=str(extract_paths.pages),
        extracted_path=str(extracted.path),
        output_path=str(selected.output_path),
        report_path=str(select_paths.report) if select_paths.report else None,
        articles=summary.articles,
        unreadable_pages=stats.unreadable_pages,
        warc_records=extraction.doc["extraction"].get("warc_records"),
        errors=dict(stats.errors),
        timeouts=dict(stats.timeouts),
        by_extractor=dict(summary.by_extractor),
        by_reason=dict(summary.by_reason),
        by_pool=dict(summary.by_pool),
        extracted_sha256=extracted.sha256,
        output_sha256=selected.output_sha256,
    )
    logger.info(run_summary.one_line())
    return run_summary
