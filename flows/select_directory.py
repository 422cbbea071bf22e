"""The ``select-directory`` flow: select every batch of a folder that needs it, each in its own subflow run."""

from __future__ import annotations

from typing import Annotated, Any

from prefect import flow, tags, task
from prefect.states import Failed
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, Field

from content_selection.flows.select_content import select_content
from content_selection.shell.credentials import with_credentials
from content_selection.shell.ended import RUN_END_HOOKS
from content_selection.shell.logs import run_logger
from content_selection.shell.options import local_task_options
from content_selection.shell.params import (
    DEFAULT_MAX_TABLE_ROWS,
    DEFAULT_OUTPUT_FORMAT,
    STAGE_TAG,
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
from content_selection.shell.runners import resolve_task_runner
from content_selection.tasks.selection import find_stale_batches
from selection_core.errors import SelectionError, error_line
from selection_storage.paths import DATA_ROOT_ENV, configured_data_root, name_once
from selection_storage.stores import location


class BatchFailure(BaseModel):
    """One batch that could not be selected."""

    input_path: str
    error: str


class DirectoryRunSummary(BaseModel):
    """What one ``select-directory`` run did."""

    directory: str
    selected: list[str] = Field(default_factory=list, description="Outputs written, in input order.")
    failed: list[BatchFailure] = Field(default_factory=list, description="Batches that failed, with their error.")


class BatchesFailedError(SelectionError):
    """Some batches of a directory run failed; the others were written."""


# Here, not in tasks/: it runs a flow, and tasks/ may not import flows/.
@task(
    name="select-batch-file",
    task_run_name=run_namer("select-batch-file", "input_path", "", task=True),
    **local_task_options(),
)
def select_batch_file(input_path: str, options: dict[str, Any]) -> Any:
    """Run ``select-content`` on one batch with the other parameters in ``options``: the output path, or a
    ``Failed`` state with the subflow's message and exception."""
    with tags(STAGE_TAG):  # a subflow run has no deployment's tags: this one lets the crash automation see it
        state = select_content(input_path=input_path, return_state=True, **options)
    if state.is_completed():
        return state.result().output_path
    error = state.result(raise_on_failure=False)
    if not isinstance(error, BaseException):
        error = SelectionError(f"{input_path}: {state.message or state.name}")  # e.g. it crashed
    return Failed(message=error_line(error), data=error)


@flow(
    name="select-directory",
    description="Select every *_extracted.json under a directory whose _selected.json is missing or older.",
    validate_parameters=True,
    **RUN_END_HOOKS,
)
@refusals_fail_the_run
def select_directory(
    directory: OptionalText = None,
    max_table_rows: TableRows = DEFAULT_MAX_TABLE_ROWS,
    data_root: OptionalText = None,
    max_concurrent_batches: Annotated[int, Field(ge=1, le=32)] = 2,
    task_runner: TaskRunnerChoice = None,
    dask_address: DaskAddress = None,
    chunk_size: OptionalCount = None,
    storage_options: StorageOptions = None,
    credentials_block: CredentialsBlock = None,
    output_format: OutputFormat = DEFAULT_OUTPUT_FORMAT,
) -> DirectoryRunSummary:
    """Select every batch under a directory that has no up-to-date `_selected.json` (or `.jsonl`); when any
    batch failed, the run ends Failed after all were tried.

    Args:
        directory: Folder (or object prefix, `s3://BUCKET/PREFIX`) scanned recursively for `*_extracted.json(l)`
            files. Empty: the data root.
        max_table_rows: Most rows of each batch's `selection-scores` table artifact.
        data_root: Directory every path must resolve inside. Empty: CONTENT_SELECTION_DATA_ROOT, else unconfined.
        max_concurrent_batches: Most batches selected at the same time (on threads).
        task_runner: Where each batch's articles are scored, as in `select-content`.
        dask_address: A Dask scheduler (`tcp://HOST:PORT`) shared by all batches, as in `select-content`.
        chunk_size: Articles per chunk (one task run each), as in `select-content`; 0 for chunks bounded by bytes.
        storage_options: Options of the object store of a prefix, as in `select-content`.
        credentials_block: A Prefect `Secret` block of the store's credentials, as in `select-content`.
        output_format: `batch` (`_selected.json`) or `dataset` (`_selected.parquet`), as in `select-content`.
    """
    logger = run_logger()
    # The subflows get the block's name, not the options it holds: no credential is stored with their runs.
    store_options = with_credentials(storage_options, credentials_block)
    folder = directory or configured_data_root(data_root)
    if not folder:
        raise SelectionError(f"no directory to scan: set the directory parameter or {DATA_ROOT_ENV}")
    stale = find_stale_batches(location(folder, store_options, "directory"), output_format)
    logger.info("%d batch(es) to select under %s", len(stale), folder)

    resolve_task_runner(task_runner, dask_address)  # a bad setting fails once, here, not per batch
    options: dict[str, Any] = {
        "max_table_rows": max_table_rows,
        "data_root": data_root,
        "task_runner": task_runner,
        "dask_address": dask_address,
        "chunk_size": chunk_size,
        "storage_options": storage_options,
        "credentials_block": credentials_block,
        "output_format": output_format,
    }
    result = DirectoryRunSummary(directory=str(folder))
    with ThreadPoolTaskRunner(max_workers=max_concurrent_batches) as runner:
        futures = [runner.submit(select_batch_file, {"input_path": str(path), "options": options}) for path in stale]
        outputs = [future.result(raise_on_failure=False) for future in futures]
    for path, output in zip(stale, outputs):  # in input order, whatever order they finished in
        if isinstance(output, str):
            result.selected.append(output)
            continue
        error = name_once(str(path), error_line(output) if isinstance(output, BaseException) else repr(output))
        result.failed.append(BatchFailure(input_path=str(path), error=error))

    if result.failed:
        errors = "; ".join(f.error for f in result.failed)
        counts = f"{len(result.failed)} of {len(stale)} batch(es) failed"
        raise BatchesFailedError(f"{counts}, the others were written: {errors}")
    return result
