"""The ``extract-inbox`` flow: extract every new page set of the inbox, each announced to the selection."""

from __future__ import annotations

from prefect import flow, tags
from pydantic import BaseModel, Field

from content_selection.flows.extract_articles import extract_articles
from content_selection.shell.credentials import with_credentials
from content_selection.shell.ended import RUN_END_HOOKS
from content_selection.shell.logs import run_logger
from content_selection.shell.params import (
    DEFAULT_MAX_TABLE_ROWS,
    STAGE_TAG,
    CredentialsBlock,
    OptionalCount,
    OptionalText,
    StorageOptions,
    TableRows,
    TimeLimit,
    run_namer,
)
from content_selection.shell.refusals import refusals_fail_the_run
from content_selection.tasks.extract import find_new_page_sets
from selection_core.errors import SelectionError, error_line
from selection_extraction import DEFAULT_TIME_LIMIT_SECONDS
from selection_extraction.inbox import failures_message, ignored_advice
from selection_storage.paths import name_once


class InboxRunSummary(BaseModel):
    """What one ``extract-inbox`` run did (the flow's return value)."""

    inbox: str = Field(description="The inbox that was looked at.")
    extracted: list[str] = Field(default_factory=list, description="Batches written, in page-set name order.")
    up_to_date: int = Field(default=0, description="Page sets whose batch was already newer than their pages.")
    ignored: list[str] = Field(default_factory=list, description="Files in the inbox that are not page sets.")


class PageSetsFailedError(SelectionError):
    """Some page sets of the inbox could not be extracted; the others were."""


@flow(
    name="extract-inbox",
    flow_run_name=run_namer("extract-inbox", "inbox", "inbox"),
    description="Extract every page set in the inbox that has no up-to-date batch; each batch is then selected.",
    validate_parameters=True,
    **RUN_END_HOOKS,
)
@refusals_fail_the_run
def extract_inbox(
    inbox: OptionalText = None,
    data_root: OptionalText = None,
    time_limit_seconds: TimeLimit = DEFAULT_TIME_LIMIT_SECONDS,
    workers: OptionalCount = None,
    max_table_rows: TableRows = DEFAULT_MAX_TABLE_ROWS,
    storage_options: StorageOptions = None,
    credentials_block: CredentialsBlock = None,
) -> InboxRunSummary:
    """Extract each new page set of the inbox into `<name>_extracted.json` beside it, and announce it.

    Args:
        inbox: The folder, inside the data root, where page sets are dropped. Empty: `<data root>/inbox` (created).
        data_root: Directory the inbox must resolve inside. Empty: CONTENT_SELECTION_DATA_ROOT; one is required.
        time_limit_seconds: Seconds one extractor may spend on one page before it is stopped (TimeoutError).
        workers: Worker processes of each extraction; 0 for one per CPU core.
        max_table_rows: Most rows of each run's `extraction-pages` table artifact.
        storage_options: Options of the object store of an inbox in a store (`s3://BUCKET/PREFIX`), whose page
            sets are those of a folder: the prefixes of pages under it, its web archives and its manifests.
        credentials_block: A Prefect `Secret` block of the store's credentials, as in `select-content`.
    """
    logger = run_logger()
    # The subflows get the block's name, not the options it holds: no credential is stored with their runs.
    store_options = with_credentials(storage_options, credentials_block)
    scan = find_new_page_sets(inbox, data_root, store_options)
    logger.info("%d new page set(s) in %s, %d up to date", len(scan.new), scan.inbox, len(scan.up_to_date))
    if scan.ignored:
        names = ", ".join(p.name for p in scan.ignored)
        logger.warning("Not page sets, ignored: %s (%s)", names, ignored_advice(scan.inbox))

    summary = InboxRunSummary(
        inbox=str(scan.inbox), up_to_date=len(scan.up_to_date), ignored=[str(p) for p in scan.ignored]
    )
    failures = list(scan.clashes)
    for page_set in scan.new:
        with tags(STAGE_TAG):  # as select-directory's subflow runs: seen by the crash automation
            state = extract_articles(
                pages=str(page_set),
                data_root=data_root,
                time_limit_seconds=time_limit_seconds,
                workers=workers,
                max_table_rows=max_table_rows,
                storage_options=storage_options,
                credentials_block=credentials_block,
                return_state=True,
            )
        if state.is_completed():
            summary.extracted.append(state.result().output_path)
            continue
        error = state.result(raise_on_failure=False)
        failures.append(
            name_once(page_set, error_line(error) if isinstance(error, BaseException) else str(state.message))
        )
    if failures:  # each failed subflow run logged its own error
        raise PageSetsFailedError(failures_message(failures, len(scan.new) + len(scan.clashes)))
    return summary
