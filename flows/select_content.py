"""The ``select-content`` flow: pick the best extractor of every article of one batch.

extract (read + validate) -> select (the deterministic core) -> persist (atomic
write) -> artifacts. All selection logic lives in ``selection_core``; this module
only chains the tasks and reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final

from prefect import flow
from prefect.runtime import flow_run
from prefect.utilities.annotations import opaque
from pydantic import BaseModel, Field

import selection_core as sc
from tasks.artifacts import publish_artifacts
from tasks.batch import extract_batch, persist_batch, write_selection_report
from tasks.logs import run_logger
from tasks.paths import check_paths
from tasks.select import select_extractors

#: Default number of rows of the ``selection-scores`` table.
DEFAULT_MAX_TABLE_ROWS: Final[int] = 200

#: Largest accepted ``max_table_rows`` (a table artifact is meant to be read in a browser).
MAX_TABLE_ROWS_LIMIT: Final[int] = 5000


class SelectionRunSummary(BaseModel):
    """What one ``select-content`` run did (the flow's return value)."""

    input_path: str = Field(description="The batch that was read.")
    output_path: str = Field(description="The selected batch that was written.")
    report_path: str | None = Field(default=None, description="The JSON Lines report, if written.")
    articles: int = Field(description="Number of articles.")
    by_extractor: dict[str, int] = Field(description="Selections per extractor.")
    by_reason: dict[str, int] = Field(description="Decisions per reason code.")
    input_sha256: str = Field(description="SHA-256 of the input bytes.")
    output_sha256: str = Field(description="SHA-256 of the output bytes.")
    core_version: str = Field(description="Version of selection_core.")

    def one_line(self) -> str:
        """A one-line human summary, e.g. for a terminal."""
        counts = ", ".join(f"{name} {count}" for name, count in self.by_extractor.items())
        return f"selected {self.articles} articles ({counts}) -> {self.output_path}"


def _run_name() -> str:
    name = Path(str(flow_run.parameters.get("input_path", "batch"))).name
    return f"select-{name}"


@flow(
    name="select-content",
    flow_run_name=_run_name,
    description="Pick, for every article of an extracted batch, the extractor whose text the others agree with.",
    validate_parameters=True,
)
def select_content(
    input_path: Annotated[str, Field(min_length=1)],
    output_path: str | None = None,
    report_path: str | None = None,
    max_table_rows: Annotated[int, Field(ge=0, le=MAX_TABLE_ROWS_LIMIT)] = DEFAULT_MAX_TABLE_ROWS,
    data_root: str | None = None,
    require_data_root: bool = False,
) -> SelectionRunSummary:
    """Select the best extractor of every article of one batch and write the result.

    Args:
        input_path: The extracted batch (JSON with an `articles` array), e.g.
            `/data/batches/2024-05-01_extracted.json`. Relative paths are taken
            from the data root when one is configured, else from the working directory.
        output_path: Where to write the selected batch. Leave empty for
            `<stem>_selected.json` beside the input. Never the input itself.
        report_path: Optional file for the full per-article explanation as JSON
            Lines (one object per article). Leave empty for no report.
        max_table_rows: Most rows shown in the `selection-scores` table artifact
            (the first articles of the batch); the cap is stated in the artifact.
        data_root: Directory that every path of the run must resolve inside
            (symlinks and `..` followed). Leave empty to use the
            CONTENT_SELECTION_DATA_ROOT environment variable; with neither, paths
            are not confined.
        require_data_root: Refuse to run unless a data root is configured. The
            triggered deployment sets it, because its path comes from an event.

    Returns:
        A summary: paths, counts per extractor and per reason, SHA-256 of input and output.
    """
    logger = run_logger()
    paths = check_paths(input_path, output_path, report_path, data_root, require_data_root)
    if paths.data_root is not None:
        logger.info("Paths confined to the data root %s", paths.data_root)

    batch = extract_batch(paths.input)
    selections = select_extractors(opaque(batch.doc), batch_name=paths.input.name)
    written = persist_batch(opaque(batch.doc), opaque(selections), paths.output)
    if paths.report is not None:
        write_selection_report(opaque(selections), paths.report)

    publish_artifacts(
        opaque(batch.doc),
        opaque(selections),
        input_path=paths.input,
        input_sha256=batch.sha256,
        output_path=written.path,
        output_sha256=written.sha256,
        report_path=paths.report,
        max_rows=max_table_rows,
    )

    summary = sc.summarize(selections)
    result = SelectionRunSummary(
        input_path=str(paths.input),
        output_path=str(written.path),
        report_path=str(paths.report) if paths.report else None,
        articles=summary.articles,
        by_extractor=dict(summary.by_extractor),
        by_reason={getattr(k, "value", k): v for k, v in summary.by_reason.items()},
        input_sha256=batch.sha256,
        output_sha256=written.sha256,
        core_version=sc.__version__,
    )
    logger.info(result.one_line())
    return result
