"""The ``select-directory`` flow: select every batch of a folder that needs it.

Run on a schedule (the ``scheduled`` deployment). Each stale batch is processed
by its own ``select-content`` subflow run, independently: one bad file fails
alone, with its error, and the others are still written. The run ends Failed if
any file failed, but only after every file was tried.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from prefect import flow
from pydantic import BaseModel, Field

from flows.select_content import DEFAULT_MAX_TABLE_ROWS, MAX_TABLE_ROWS_LIMIT, select_content
from selection_core.errors import SelectionError
from tasks.discover import find_stale_batches
from tasks.logs import run_logger
from tasks.paths import DATA_ROOT_ENV, configured_data_root


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


@flow(
    name="select-directory",
    description="Select every *_extracted.json under a directory whose _selected.json is missing or older.",
    validate_parameters=True,
)
def select_directory(
    directory: str | None = None,
    max_table_rows: Annotated[int, Field(ge=0, le=MAX_TABLE_ROWS_LIMIT)] = DEFAULT_MAX_TABLE_ROWS,
    data_root: str | None = None,
) -> DirectoryRunSummary:
    """Select every batch under a directory that has no up-to-date `_selected.json`.

    Args:
        directory: Folder scanned recursively for `*_extracted.json` files. Leave
            empty to scan the data root (the data_root parameter or the
            CONTENT_SELECTION_DATA_ROOT environment variable).
        max_table_rows: Most rows of each batch's `selection-scores` table artifact.
        data_root: Directory that every path must resolve inside. Leave empty to
            use CONTENT_SELECTION_DATA_ROOT; with neither, paths are not confined.

    Returns:
        The outputs written and the batches that failed. The run ends Failed when
        any batch failed, after all of them were tried.
    """
    logger = run_logger()
    folder = directory or configured_data_root(data_root)
    if not folder:
        raise SelectionError(f"no directory to scan: set the directory parameter or {DATA_ROOT_ENV}")
    stale = find_stale_batches(Path(folder))
    logger.info("%d batch(es) to select under %s", len(stale), folder)

    result = DirectoryRunSummary(directory=str(folder))
    for path in stale:
        state = select_content(
            input_path=str(path),
            max_table_rows=max_table_rows,
            data_root=data_root,
            return_state=True,
        )
        if state.is_completed():
            result.selected.append(state.result().output_path)
        else:
            error = state.result(raise_on_failure=False)
            message = str(error) if isinstance(error, BaseException) else (state.message or state.name)
            logger.error("%s failed: %s", path, message)
            result.failed.append(BatchFailure(input_path=str(path), error=message))

    if result.failed:
        names = "; ".join(f"{f.input_path}: {f.error}" for f in result.failed)
        raise BatchesFailedError(
            f"{len(result.failed)} of {len(stale)} batch(es) failed, the others were written: {names}"
        )
    return result
