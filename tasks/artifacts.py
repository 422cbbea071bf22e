"""The ``publish-artifacts`` task: the run's evidence (:mod:`selection_core.evidence`) as Prefect artifacts."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Final
from uuid import UUID

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

import selection_core as sc
from selection_core.evidence import (
    CLOSEST_CALLS_ARTIFACT_KEY,
    SCORES_ARTIFACT_KEY,
    SUMMARY_ARTIFACT_KEY,
    ShownEvidence,
    closest_calls_markdown,
    scores_description,
    summary_markdown,
)
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
    evidence: ShownEvidence,
    summary: sc.Summary,
    *,
    input_path: Path,
    input_sha256: str,
    output_path: Path,
    output_sha256: str,
    report_path: Path | None,
    max_rows: int,
    read_as: str = "",
) -> dict[str, UUID]:
    """Create the ``selection-scores`` table and the ``selection-closest-calls`` and ``selection-summary`` markdown.

    Args:
        evidence: The table's rows (at most ``max_rows``) and the first closest calls.
        summary: The counts over the whole batch.
        read_as: How the batch was read (:func:`selection_core.evidence.read_as_text`).

    Returns:
        The artifact ids by key.
    """
    name, shown = input_path.name, len(evidence.rows)
    table_id = create_table_artifact(
        table=evidence.rows,
        key=SCORES_ARTIFACT_KEY,
        description=scores_description(name, shown, summary.articles, max_rows),
    )
    calls_id = create_markdown_artifact(
        markdown=closest_calls_markdown(name, evidence.close_calls, summary),
        key=CLOSEST_CALLS_ARTIFACT_KEY,
        description=f"Ties and fallbacks of {name}",
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
            shown_rows=shown,
            max_rows=max_rows,
            read_as=read_as,
        ),
        key=SUMMARY_ARTIFACT_KEY,
        description=f"Selection summary of {name}",
    )
    return {SCORES_ARTIFACT_KEY: table_id, CLOSEST_CALLS_ARTIFACT_KEY: calls_id, SUMMARY_ARTIFACT_KEY: markdown_id}
