"""The run's evidence for people (:mod:`selection_core.evidence`): the scores table's rows and the summary markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import selection_core as sc
from selection_core.evidence import score_rows, scores_description, summary_markdown
from tests.support.prefect_fixtures import make_batch

# --- artifacts content --------------------------------------------------------------


def _selections(n: int) -> tuple[dict, list[sc.Selection]]:
    doc = make_batch(n)
    return doc, sc.select_articles(doc["articles"])


@pytest.mark.parametrize(
    ("n_articles", "max_rows", "expected_rows"),
    [
        pytest.param(0, 200, 0, id="empty-batch"),
        pytest.param(3, 200, 3, id="under-cap"),
        pytest.param(5, 5, 5, id="at-cap"),
        pytest.param(7, 2, 2, id="over-cap"),
        pytest.param(4, 0, 0, id="cap-zero"),
    ],
)
def test_score_rows_are_capped(n_articles: int, max_rows: int, expected_rows: int) -> None:
    doc, selections = _selections(n_articles)
    rows = score_rows(doc, selections, max_rows)
    assert [row["index"] for row in rows] == list(range(expected_rows))


def test_score_rows_carry_the_explanation() -> None:
    doc, selections = _selections(2)
    rows = score_rows(doc, selections, 10)
    assert list(rows[0]) == [
        "index", "id", "url", "title", "selected", "reason", "pool", "consensus_size", "tie_pool",
        *[f"{name}_{col}" for name in sc.EXTRACTORS for col in ("state", "shingles", "coverage", "support", "score")],
    ]  # fmt: skip
    for row, selection in zip(rows, selections, strict=True):
        assert row["id"] == f"a{selection.index}"
        assert row["selected"] == selection.selected
        assert row["reason"] == selection.reason.value
        assert row["pool"] == selection.pool.value
        for candidate in selection.candidates:
            assert row[f"{candidate.name}_state"] == candidate.state.value
            assert row[f"{candidate.name}_shingles"] == candidate.shingle_count
            assert row[f"{candidate.name}_score"] == round(float(candidate.score), 4)
    json.dumps(rows)  # a table artifact must be JSON


def test_score_rows_omit_id_columns_no_article_has() -> None:
    doc = {"articles": [{"newspaper4k": {"text": "only text here"}}]}
    rows = score_rows(doc, sc.select_articles(doc["articles"]), 10)
    assert "id" not in rows[0] and "url" not in rows[0] and "title" not in rows[0]


def test_scores_description_states_the_cap() -> None:
    assert "capped at max_table_rows=2" in scores_description("b.json", 2, 7, 2)
    assert "report_path" in scores_description("b.json", 2, 7, 2)
    assert "report_path" not in scores_description("b.json", 7, 7, 200)


def test_summary_markdown_has_counts_paths_hashes_and_versions() -> None:
    doc, selections = _selections(3)
    summary = sc.summarize(selections)
    text = summary_markdown(
        summary=summary,
        input_path=Path("/data/b_extracted.json"),
        input_sha256="a" * 64,
        output_path=Path("/data/b_extracted_selected.json"),
        output_sha256="b" * 64,
        report_path=None,
        versions={"selection_core": sc.__version__, "ftfy": "6.3.1", "regex": "2025.1.1"},
        shown_rows=3,
        max_rows=200,
    )
    assert "| Articles | 3 |" in text
    assert f"| Input SHA-256 | `{'a' * 64}` |" in text
    assert f"| Output SHA-256 | `{'b' * 64}` |" in text
    assert "`/data/b_extracted_selected.json`" in text
    for name, count in summary.by_extractor.items():
        assert f"| {name} | {count} |" in text
    for reason, count in summary.by_reason.items():
        assert f"| `{reason}` | {count} |" in text
    for component in ("selection_core", "ftfy", "regex"):
        assert f"| {component} | " in text
    assert f"| selection_core | {sc.__version__} |" in text
