"""The ``publish-artifacts`` task: the run's evidence (:mod:`selection_core.evidence`) as Prefect artifacts.

* ``selection-scores`` (table): one row per article, capped at ``max_rows``, with
  the cap stated in the description;
* ``selection-summary`` (markdown): counts per extractor and per reason, paths,
  SHA-256 of input and output, versions.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, Final
from uuid import UUID

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

import selection_core as sc
from selection_core.evidence import SCORES_ARTIFACT_KEY, SUMMARY_ARTIFACT_KEY, scores_description, summary_markdown
from tasks.options import api_task_options

#: Distributions whose versions the summary reports.
REPORTED_DISTRIBUTIONS: Final[tuple[str, ...]] = ("ftfy", "regex", "prefect")


def component_versions() -> dict[str, str]:
    """Versions of the core and of the libraries that decide or run the selection."""
    versions = {"selection_core": sc.__version__}
    for dist in REPORTED_DISTRIBUTIONS:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


@task(name="publish-artifacts", **api_task_options())
def publish_artifacts(
    rows: list[dict[str, Any]],
    summary: sc.Summary,
    *,
    input_path: Path,
    input_sha256: str,
    output_path: Path,
    output_sha256: str,
    report_path: Path | None,
    max_rows: int,
) -> dict[str, UUID]:
    """Create the ``selection-scores`` table and the ``selection-summary`` markdown.

    Args:
        rows: The table's rows (:func:`score_rows`), at most ``max_rows``.
        summary: The counts over the whole batch.

    Returns:
        The artifact ids by key.
    """
    table_id = create_table_artifact(
        table=rows,
        key=SCORES_ARTIFACT_KEY,
        description=scores_description(input_path.name, len(rows), summary.articles, max_rows),
    )
    markdown_id = create_markdown_artifact(
        markdown=summary_markdown(
            summary=summary,
            input_path=input_path,
            input_sha256=input_sha256,
            output_path=output_path,
            output_sha256=output_sha256,
            report_path=report_path,
            versions=component_versions(),
            shown_rows=len(rows),
            max_rows=max_rows,
        ),
        key=SUMMARY_ARTIFACT_KEY,
        description=f"Selection summary of {input_path.name}",
    )
    return {SCORES_ARTIFACT_KEY: table_id, SUMMARY_ARTIFACT_KEY: markdown_id}
