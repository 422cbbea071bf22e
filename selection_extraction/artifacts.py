"""What the extract step's Prefect artifacts say (keys, table rows, descriptions): pure functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_core.evidence import counts_text, display_url, md_cell, md_code
from selection_extraction.extracted import ExtractionStats
from selection_extraction.pages import PageSet

PAGES_ARTIFACT_KEY: Final[str] = "extraction-pages"
EXTRACTION_SUMMARY_ARTIFACT_KEY: Final[str] = "extraction-summary"
EXTRACTION_PROGRESS_ARTIFACT_KEY: Final[str] = "extraction-progress"

#: Longest error shown in a table cell.
MAX_ERROR_CELL: Final[int] = 160


def progress_description(page_set: PageSet, chunked: bool = False) -> str:
    """The description of the ``extraction-progress`` artifact (saying so when the run is cut in chunks)."""
    pages = "the pages" if page_set.known_pages is None else f"{page_set.known_pages} pages"
    return f"Extracting {pages} of {Path(page_set.source).name}{' in chunks' if chunked else ''}"


def page_row(index: int, article: dict[str, Any]) -> dict[str, Any]:
    """The row of one page: ids, decoding, and per extractor its text length and error (the URL shown by
    :func:`~selection_core.evidence.display_url`)."""
    row: dict[str, Any] = {
        "index": index,
        "id": article.get("id"),
        "url": display_url(url) if isinstance(url := article.get("url"), str) else url,
        "path": article.get("path"),
        "encoding": article.get("encoding"),
        "encoding_source": article.get("encoding_source"),
    }
    for name in EXTRACTORS:
        block = article.get(name) or {}
        text = block.get(TEXT_FIELDS[name])
        error = block.get("error")
        row[f"{name}_chars"] = len(text) if isinstance(text, str) else 0
        row[f"{name}_error"] = (
            (error[: MAX_ERROR_CELL - 1] + "…") if isinstance(error, str) and len(error) > MAX_ERROR_CELL else error
        )
    return row


class PageRows:
    """The rows of the first ``max_rows`` pages, kept as the articles stream past (an ``ArticleSpool``'s ``watch``)."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max(max_rows, 0)
        self.rows: list[dict[str, Any]] = []

    def __call__(self, index: int, article: dict[str, Any]) -> None:
        if index < self.max_rows:
            self.rows.append(page_row(index, article))


def pages_table_description(output_path: Path, shown_rows: int, stats: ExtractionStats, max_rows: int) -> str:
    """The description of the ``extraction-pages`` table."""
    return (
        f"Extraction of {output_path.name}: {shown_rows} of {stats.pages} pages shown "
        f"(capped at max_table_rows={max_rows})."
    )


def summary_description(output_path: Path) -> str:
    """The description of the ``extraction-summary`` markdown."""
    return f"Extraction summary of {output_path.name}"


def extraction_markdown(
    doc: dict[str, Any], stats: ExtractionStats, output_path: Path, output_sha256: str, shown_rows: int, max_rows: int
) -> str:
    """The ``extraction-summary`` markdown: counts, output, versions and settings (``doc``'s articles are not read)."""
    meta = doc.get("extraction", {})
    lines = [
        f"# Extraction: {md_cell(Path(str(meta.get('input', ''))).name or str(meta.get('input', '')))}",
        "",
        "| Item | Value |",
        "|---|---|",
        f"| Input | {md_code(str(meta.get('input', '')))} ({md_cell(str(meta.get('input_kind', '')))}) |",
        *([f"| WARC records | {md_cell(counts_text(meta['warc_records']))} |"] if meta.get("warc_records") else []),
        f"| Pages | {stats.pages} |",
        f"| Unreadable pages | {stats.unreadable_pages} |",
        f"| Output | {md_code(str(output_path))} |",
        f"| Output SHA-256 | {md_code(output_sha256)} |",
        f"| Time limit per extractor and page | {meta.get('time_limit_seconds')} s |",
        f"| Worker crashes | {stats.worker_crashes} |",
        f"| Network attempts blocked | {stats.blocked_network_attempts} |",
        "",
        "## Extractors",
        "",
        "| Extractor | Version | Errors | Timeouts | Call |",
        "|---|---|---:|---:|---|",
    ]
    described = meta.get("extractors", {})
    for name in EXTRACTORS:
        info = described.get(name, {})
        lines.append(
            f"| {name} | {info.get('distribution', '')} {info.get('version', '')} | {stats.errors.get(name, 0)} "
            f"| {stats.timeouts.get(name, 0)} | {md_code(str(info.get('call', '')))} |"
        )
    lines += [
        "",
        f"Decoding: {md_cell(str(meta.get('decoding', '')))}.",
        "",
        f"The table {md_code(PAGES_ARTIFACT_KEY)} shows {shown_rows} of {stats.pages} pages "
        f"(max_table_rows={max_rows}).",
        "",
    ]
    return "\n".join(lines)
