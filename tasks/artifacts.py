"""The artifacts' Markdown, and the ``publish-artifacts`` task: the run's evidence as Prefect artifacts."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

import selection_core as sc
from content_selection.shell.options import api_task_options
from selection_core.config import EXTRACTORS
from selection_core.evidence import (
    CLOSE_CALL_REASONS,
    CLOSEST_CALLS_ARTIFACT_KEY,
    MAX_CLOSEST_CALLS,
    SCORES_ARTIFACT_KEY,
    SUMMARY_ARTIFACT_KEY,
    TABLE_DIGITS,
    ShownEvidence,
    md_cell,
    md_code,
)
from selection_core.select import Reason, State


def component_versions() -> dict[str, str]:
    """Versions of the core and of the libraries that decide or run the selection."""
    versions = {"selection_core": sc.__version__}
    for dist in ("ftfy", "regex", "prefect"):  # dependencies: always installed
        versions[dist] = importlib.metadata.version(dist)
    return versions


def close_calls_total(summary: sc.Summary) -> int:
    return sum(count for reason, count in summary.by_reason.items() if Reason(reason) in CLOSE_CALL_REASONS)


def closest_calls_markdown(batch_name: str, entries: Sequence[Mapping[str, Any]], summary: sc.Summary) -> str:
    """The ``selection-closest-calls`` markdown: the first close calls, with the cap stated."""
    total = close_calls_total(summary)
    lines = [f"# Closest calls: {md_cell(batch_name)}", ""]
    if total == 0:
        lines += [
            f"No ties or fallbacks among the {summary.articles} articles: every decision had a clear top score "
            "or a single candidate.",
            "",
        ]
        return "\n".join(lines)
    lines += [
        f"{len(entries)} of the {total} decisions (of {summary.articles} articles) that were a tie or a fallback, "
        f"the first ones in the batch (at most {MAX_CLOSEST_CALLS} are listed). Each extractor: score / "
        "shingle count, or its state when it was not usable; the tie pool in bold. The report "
        "(`report_path`) has every decision in full.",
        "",
        # The article last, as in the scores table: Prefect's V1 UI does not wrap table cells.
        "| Index | Selected | Reason | " + " | ".join(EXTRACTORS) + " | Article |",
        "|---:|---|---|" + "---|" * len(EXTRACTORS) + "---|",
    ]
    for entry in entries:
        candidates = [_candidate_text(entry["tie_pool"], *candidate) for candidate in entry["candidates"]]
        cells = [str(entry["index"]), entry["selected"], entry["reason"], *candidates, md_cell(entry["article"] or "–")]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def _candidate_text(tie_pool: Sequence[str], name: str, state: str, shingles: int, score: float | None) -> str:
    """One extractor's cell in a closest call, e.g. ``**1.0000 / 65**`` (bold: in the tie pool)."""
    if state == State.UNAVAILABLE.value:
        return state
    text = f"{shingles}" if score is None else f"{score:.{TABLE_DIGITS}f} / {shingles}"
    text = text if state == State.USABLE.value else f"{text} ({state})"
    return f"**{text}**" if name in tie_pool and len(tie_pool) > 1 else text


def scores_description(batch_name: str, shown: int, total: int, max_rows: int) -> str:
    text = (
        f"Selection evidence for {batch_name}: {shown} of {total} articles shown (capped at max_table_rows={max_rows})."
    )
    if shown < total:
        text += " Set the report_path parameter to get every article as JSON Lines."
    return text


def summary_markdown(
    *,
    summary: sc.Summary,
    input_path: Path,
    input_sha256: str,
    output_path: Path,
    output_sha256: str,
    report_path: Path | None,
    versions: dict[str, str],
    shown_rows: int,
    max_rows: int,
    read_as: str = "",
) -> str:
    """The ``selection-summary`` markdown: counts, paths, fingerprints, how the batch was read, and versions."""
    total = summary.articles
    report = md_code(str(report_path)) if report_path else "not written"
    lines = [
        f"# Content selection: {md_cell(input_path.name)}",
        "",
        "| Item | Value |",
        "|---|---|",
        f"| Articles | {total} |",
        f"| Input | {md_code(str(input_path))} |",
        f"| Input SHA-256 | {md_code(input_sha256)} |",
        f"| Output | {md_code(str(output_path))} |",
        f"| Output SHA-256 | {md_code(output_sha256)} |",
        f"| Report (JSON Lines) | {report} |",
        f"| Ties and fallbacks | {close_calls_total(summary)} (listed in {md_code(CLOSEST_CALLS_ARTIFACT_KEY)}) |",
        *([f"| Read | {md_cell(read_as)} |"] if read_as else []),
        "",
        "## Selections per extractor",
        "",
        "| Extractor | Articles | Share |",
        "|---|---:|---:|",
    ]
    for name, count in summary.by_extractor.items():
        share = f"{100 * count / total:.1f} %" if total else "–"
        lines.append(f"| {name} | {count} | {share} |")
    lines += ["", "## Decisions per reason", "", "| Reason | Articles |", "|---|---:|"]
    for reason, count in summary.by_reason.items():
        lines.append(f"| {md_code(reason)} | {count} |")
    lines += ["", "## Versions", "", "| Component | Version |", "|---|---|"]
    for name, version in versions.items():
        lines.append(f"| {md_cell(name)} | {md_cell(version)} |")
    lines += [
        "",
        f"The table {md_code(SCORES_ARTIFACT_KEY)} shows {shown_rows} of {total} articles (max_table_rows={max_rows}).",
        "",
    ]
    return "\n".join(lines)


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
    """Create the ``selection-scores`` table and the ``selection-closest-calls`` and ``selection-summary`` markdown;
    the artifact ids by key. ``evidence``: the table's rows (at most ``max_rows``) and the first closest calls."""
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
