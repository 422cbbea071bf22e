"""What the extract step's artifacts say (selection_extraction.artifacts), without Prefect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from selection_extraction import ExtractionStats, Page, PageSet
from selection_extraction.artifacts import (
    EXTRACTION_PROGRESS_ARTIFACT_KEY,
    EXTRACTION_SUMMARY_ARTIFACT_KEY,
    MAX_ERROR_CELL,
    PAGES_ARTIFACT_KEY,
    PageRows,
    pages_table_description,
    progress_description,
    summary_description,
)

STATS = ExtractionStats(3, 1, {"trafilatura": 1, "newspaper4k": 0, "readability": 2}, {"trafilatura": 1}, 0, ())


def page_rows(doc: dict[str, Any], max_rows: int) -> list[dict[str, Any]]:
    """The table's rows as :class:`PageRows` keeps them while the batch's articles stream past."""
    rows = PageRows(max_rows)
    for index, article in enumerate(doc["articles"]):
        rows(index, article)
    return rows.rows


def article(index: int, error: str | None = None) -> dict[str, Any]:
    return {
        "id": f"a{index}",
        "url": None,
        "path": f"a{index}.html",
        "encoding": "utf-8",
        "encoding_source": "valid-utf-8",
        "trafilatura": {"text": "" if error else "abc", "error": error},
        "newspaper4k": {"text": "abcd", "error": None, "title": None},
        "readability": {"cleaned_text": "ab", "error": None, "title": None},
    }


def test_the_keys() -> None:
    assert (PAGES_ARTIFACT_KEY, EXTRACTION_SUMMARY_ARTIFACT_KEY, EXTRACTION_PROGRESS_ARTIFACT_KEY) == (
        "extraction-pages",
        "extraction-summary",
        "extraction-progress",
    )


def test_progress_descriptions() -> None:
    pages = PageSet("/data/2024-05-01", "directory", (Page("a", None, "a.html", Path("a.html")),) * 3)
    assert progress_description(pages) == "Extracting 3 pages of 2024-05-01"
    assert progress_description(pages, chunked=True) == "Extracting 3 pages of 2024-05-01 in chunks"


def test_rows_are_capped_and_long_errors_cut() -> None:
    doc = {"articles": [article(0), article(1, "E: " + "x" * 500), article(2)]}
    rows = page_rows(doc, 2)
    assert [row["id"] for row in rows] == ["a0", "a1"]
    assert rows[0]["trafilatura_chars"] == 3 and rows[0]["newspaper4k_chars"] == 4 and rows[0]["readability_chars"] == 2
    assert len(rows[1]["trafilatura_error"]) == MAX_ERROR_CELL and rows[1]["trafilatura_error"].endswith("…")
    assert page_rows(doc, -1) == []


def test_urls_are_shown_without_scheme_so_that_an_ampersand_stays_one() -> None:
    doc = {"articles": [{**article(0), "url": "https://www.example.org/a?b=1&c=2"}, article(1)]}
    assert [row["url"] for row in page_rows(doc, 10)] == ["example.org/a?b=1&c=2", None]


def test_descriptions_of_the_table_and_the_summary() -> None:
    output = Path("/data/2024-05-01_extracted.json")
    assert pages_table_description(output, 2, STATS, 2) == (
        "Extraction of 2024-05-01_extracted.json: 2 of 3 pages shown (capped at max_table_rows=2)."
    )
    assert summary_description(output) == "Extraction summary of 2024-05-01_extracted.json"
