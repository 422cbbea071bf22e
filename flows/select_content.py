"""The ``select-content`` flow: pick the best extractor of every article of one batch."""

from __future__ import annotations

from typing import Annotated

from prefect import flow
from prefect.utilities.annotations import opaque
from pydantic import BaseModel, Field

import selection_core as sc
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
    run_namer,
)
from content_selection.shell.refusals import refusals_fail_the_run
from content_selection.shell.runners import TaskRunnerName, chunk_runner, resolve_task_runner
from content_selection.tasks.artifacts import publish_artifacts
from content_selection.tasks.selection import IN_PROCESS, check_paths, select_batch, select_chunk
from selection_core.evidence import counts_text, read_as_text
from selection_engine.engine import Selected, select_job
from selection_storage.paths import RunPaths


class SelectionRunSummary(BaseModel):
    """What one ``select-content`` run did (the flow's return value)."""

    input_path: str = Field(description="The batch that was read.")
    output_path: str = Field(description="The selected batch (or the dataset) that was written.")
    report_path: str | None = Field(default=None, description="The JSON Lines report, if written.")
    articles: int = Field(description="Number of articles.")
    by_extractor: dict[str, int] = Field(description="Selections per extractor.")
    by_reason: dict[str, int] = Field(description="Decisions per reason code.")
    read_as: str = Field(default="", description="How the batch was read: in how many chunks, where.")
    input_sha256: str = Field(description="SHA-256 of the input bytes.")
    output_sha256: str = Field(description="SHA-256 of the output bytes.")
    core_version: str = Field(description="Version of selection_core.")

    @classmethod
    def of(cls, selected: Selected, read_as: str) -> SelectionRunSummary:
        summary = selected.summary
        return cls(
            input_path=str(selected.input_path),
            output_path=str(selected.output_path),
            report_path=str(selected.report_path) if selected.report_path else None,
            articles=summary.articles,
            by_extractor=dict(summary.by_extractor),
            by_reason=dict(summary.by_reason),
            read_as=read_as,
            input_sha256=selected.input_sha256,
            output_sha256=selected.output_sha256,
            core_version=sc.__version__,
        )

    def one_line(self) -> str:
        counts = counts_text(self.by_extractor)
        return f"selected {self.articles} articles ({counts}) -> {self.output_path}"


def select_on(
    paths: RunPaths,
    max_table_rows: int,
    chunk_size: int | None,
    runner_name: TaskRunnerName,
    dask_address: str | None,
) -> tuple[Selected, str]:
    """Select the batch with its chunks on the chosen runner; what was written, and how it was read."""
    if runner_name is TaskRunnerName.IN_PROCESS:
        selected = select_batch(paths, max_table_rows, chunk_size)
        return selected, read_as_text(selected.chunks, IN_PROCESS)
    where = f"in parallel on the {runner_name.value} task runner"
    with chunk_runner(runner_name, dask_address, select_job, select_chunk) as (workers, map_chunks):
        # In the flow itself: a task submitted from inside a task does not reach Prefect's own runners.
        selected = select_batch.fn(paths, max_table_rows, chunk_size, workers, map_chunks, where)
    return selected, read_as_text(selected.chunks, where)


def publish_selection(selected: Selected, read_as: str, max_table_rows: int) -> None:
    """The run's artifacts: scores table, closest calls and summary."""
    assert selected.evidence is not None
    publish_artifacts(
        opaque(selected.evidence),
        selected.summary,
        input_path=selected.input_path,
        input_sha256=selected.input_sha256,
        output_path=selected.output_path,
        output_sha256=selected.output_sha256,
        report_path=selected.report_path,
        max_rows=max_table_rows,
        read_as=read_as,
    )


@flow(
    name="select-content",
    flow_run_name=run_namer("select", "input_path", "batch"),
    description="Pick, for every article of an extracted batch, the extractor whose text the others agree with.",
    validate_parameters=True,
    **RUN_END_HOOKS,
)
@refusals_fail_the_run
def select_content(
    input_path: Annotated[str, Field(min_length=1)],
    output_path: OptionalText = None,
    report_path: OptionalText = None,
    max_table_rows: TableRows = DEFAULT_MAX_TABLE_ROWS,
    data_root: OptionalText = None,
    require_data_root: bool = False,
    task_runner: TaskRunnerChoice = None,
    dask_address: DaskAddress = None,
    chunk_size: OptionalCount = None,
    storage_options: StorageOptions = None,
    credentials_block: CredentialsBlock = None,
    output_format: OutputFormat = DEFAULT_OUTPUT_FORMAT,
) -> SelectionRunSummary:
    """Select the best extractor of every article of one batch and write the result.

    Args:
        input_path: The extracted batch (JSON or JSON Lines), a file or an object's URL (`s3://BUCKET/KEY`); a
            relative path starts at the data root, if any.
        output_path: Where to write the output. Empty: `<stem>_selected.json` (`.parquet` for the dataset) beside
            the input.
        report_path: Optional file for the per-article explanation as JSON Lines. Empty: no report.
        max_table_rows: Most rows of the `selection-scores` table artifact (the first articles).
        data_root: Directory every path must resolve inside. Empty: CONTENT_SELECTION_DATA_ROOT, else unconfined.
        require_data_root: Refuse to run unless a data root is configured (the triggered deployment sets it).
        task_runner: Where the articles are scored: `in-process`, `process` or `dask`. Empty:
            CONTENT_SELECTION_TASK_RUNNER, else `dask` with an address, else `in-process`.
        dask_address: A Dask scheduler, `tcp://HOST:PORT`. Empty: CONTENT_SELECTION_DASK_ADDRESS, else a local cluster.
        chunk_size: Most articles per chunk (one task run each on `dask`); 0 for chunks bounded by bytes.
        storage_options: Options of the object store of `s3://`, `gs://`, `az://` paths (an endpoint, a region);
            credentials are best left to the environment, an instance role or `credentials_block`.
        credentials_block: A Prefect `Secret` block whose value, a JSON object of storage options (e.g. `{"key": ...,
            "secret": ...}`), is merged into `storage_options` when the run starts (the block's value wins on a
            clash); only its name is stored with the run. Empty: none.
        output_format: `batch`: the selected batch (every article with `selected_extractor`); `dataset`: Parquet,
            one row per article with the selected text, its language, id, URL, date, file and dump (the `dataset`
            extra).
    """
    logger = run_logger()
    storage_options = with_credentials(storage_options, credentials_block)
    paths = check_paths(
        input_path, output_path, report_path, data_root, require_data_root, storage_options, output_format=output_format
    )
    if paths.data_root is not None:
        logger.info("Paths confined to the data root %s", paths.data_root)
    runner_name, address = resolve_task_runner(task_runner, dask_address)
    selected, read_as = select_on(paths, max_table_rows, chunk_size, runner_name, address)
    publish_selection(selected, read_as, max_table_rows)
    result = SelectionRunSummary.of(selected, read_as)
    logger.info(result.one_line())
    return result
