"""The dataset's rows: the selected text, its language and the metadata columns, from each article and its selection.

The language here is a function of the test's (the core takes it; the real model's rows: tests/engine).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from selection_core.dataset import COLUMN_NAMES, COLUMNS, dataset_row, render_rows
from selection_core.select import Reason, select_article

SHARED = "the committee approved the new budget for the city schools after a long public debate on monday evening"


def _language_of(text: str) -> tuple[str, float | None]:
    """A stand-in for the engine's model: the text's first word as its 'language', its length as the score."""
    return (text.split()[0], float(len(text))) if text else ("und", None)


def _row(article: dict[str, Any]) -> dict[str, Any]:
    return dataset_row(article, select_article(article), _language_of)


@pytest.mark.parametrize(
    ("article", "text", "extractor", "reason"),
    [
        pytest.param(
            {"readability": {"cleaned_text": "Only readability has it."}},
            "Only readability has it.",
            "readability",
            Reason.SINGLE_CANDIDATE,
            id="readability-reads-cleaned-text",
        ),
        pytest.param({}, "", "newspaper4k", Reason.ALL_UNAVAILABLE, id="no-text-at-all-is-empty"),
        pytest.param(
            {"newspaper4k": {"text": 42}, "trafilatura": {"text": ""}},
            "",
            "newspaper4k",
            Reason.ALL_UNAVAILABLE,
            id="a-text-that-is-not-a-string-is-empty",
        ),
        pytest.param(
            {"trafilatura": {"text": SHARED + " Share this."}, "newspaper4k": {"text": SHARED}},
            SHARED,
            "newspaper4k",
            Reason.CONSENSUS_TOP_SCORE,
            id="consensus-keeps-the-text-exactly",
        ),
    ],
)
def test_the_text_is_the_selected_extractors_as_the_batch_holds_it(
    article: dict[str, Any], text: str, extractor: str, reason: Reason
) -> None:
    row = _row(article)
    assert (row["text"], row["selected_extractor"], row["reason"]) == (text, extractor, reason.value)


def test_the_score_is_the_selected_candidates_rounded_and_null_without_a_consensus() -> None:
    article = {"trafilatura": {"text": SHARED + " Share this story."}, "newspaper4k": {"text": SHARED}}
    selection = select_article(article)
    exact = selection.candidate(selection.selected).score
    assert exact is not None and dataset_row(article, selection, _language_of)["score"] == round(float(exact), 6)
    assert _row({"trafilatura": {"text": "alone"}})["score"] is None


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({}, {"id": None, "dump": None, "url": None, "date": None, "file_path": None}, id="none"),
        pytest.param(
            {"id": "<urn:x>", "url": "https://e.org/", "path": "a.warc.gz", "warc_date": "2024-04-12T00:00:05Z"},
            {"id": "<urn:x>", "url": "https://e.org/", "file_path": "a.warc.gz", "date": "2024-04-12T00:00:05Z"},
            id="a-warc-page",
        ),
        pytest.param(
            {"warc_dump": "CC-MAIN-2024-18", "warc_date": "2024-04-12", "date": "2019-01-01"},
            {"dump": "CC-MAIN-2024-18", "date": "2024-04-12"},
            id="the-warc-date-before-the-articles-own",
        ),
        pytest.param({"date": "2019-01-01"}, {"date": "2019-01-01"}, id="the-articles-own-date"),
        pytest.param({"warc_date": None, "date": "2019-01-01"}, {"date": "2019-01-01"}, id="a-null-is-skipped"),
        pytest.param({"id": 17, "url": ["a", 1]}, {"id": "17", "url": '["a",1]'}, id="not-a-string-as-its-json"),
    ],
)
def test_the_metadata_columns_and_where_they_come_from(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    row = _row({**fields, "trafilatura": {"text": "some text"}})
    assert {name: row[name] for name in expected} == expected


def test_a_row_has_the_columns_in_order_and_the_lines_one_row_each() -> None:
    batch = [{"id": f"a{i}", "trafilatura": {"text": f"text {i}"}} for i in range(3)]
    selections = [select_article(a, i) for i, a in enumerate(batch)]
    assert list(dataset_row(batch[0], selections[0], _language_of)) == list(COLUMN_NAMES) == [c.name for c in COLUMNS]
    lines = render_rows(batch, selections, _language_of).splitlines()
    rows = [dataset_row(a, s, _language_of) for a, s in zip(batch, selections)]
    assert [orjson.loads(line) for line in lines] == rows


def test_the_language_columns_are_the_language_of_the_selected_text() -> None:
    article = {"trafilatura": {"text": SHARED + " Share this."}, "newspaper4k": {"text": SHARED}}
    row = _row(article)
    assert row["text"] == SHARED and (row["language"], row["language_score"]) == ("the", float(len(SHARED)))
    assert (_row({})["language"], _row({})["language_score"]) == ("und", None)
