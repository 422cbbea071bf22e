"""The run's evidence for people (:mod:`selection_core.evidence`): the scores table, the closest calls,
the summary markdown and the report lines."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selection_core as sc
from selection_core.evidence import (
    ARTICLE_LABEL_CHARS,
    CLOSE_CALL_REASONS,
    MAX_CLOSEST_CALLS,
    TABLE_COLUMNS,
    align_rows,
    article_label,
    article_row,
    close_call_entries,
    display_url,
    merge_evidence,
    report_entry,
    shorten,
)
from tests.support import examples
from tests.support.evidence import batch_evidence, score_rows
from tests.support.prefect_fixtures import make_batch

#: Texts that give each kind of decision (see tests/core/test_rule_cases.py for the rule's own cases).
WORDS = " ".join(f"w{i}" for i in range(30))
OTHER = " ".join(f"o{i}" for i in range(30))
THIRD = " ".join(f"t{i}" for i in range(40))
KINDS: dict[str, dict[str, Any]] = {
    "top-score": {
        "trafilatura": {"text": WORDS + " menu login share"},
        "newspaper4k": {"text": WORDS},
        "readability": {"cleaned_text": WORDS + " " + OTHER},
    },
    "tie-priority": {
        "trafilatura": {"text": WORDS},
        "newspaper4k": {"text": WORDS},
        "readability": {"cleaned_text": WORDS},
    },
    "no-consensus": {
        "trafilatura": {"text": WORDS},
        "newspaper4k": {"text": OTHER},
        "readability": {"cleaned_text": THIRD},
    },
    "single": {"newspaper4k": {"text": WORDS}, "readability": {"cleaned_text": "", "error": None}},
    "none": {"trafilatura": None},
    "degraded": {"trafilatura": {"text": WORDS, "error": "Timeout"}, "newspaper4k": {"text": WORDS, "error": "x"}},
}


def _selections(n: int) -> tuple[dict, list[sc.Selection]]:
    doc = make_batch(n)
    return doc, sc.select_articles(doc["articles"])


# --- the scores table ---------------------------------------------------------------------------


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


def test_score_rows_say_what_was_picked_and_why_in_seven_columns() -> None:
    doc, selections = _selections(2)
    rows = score_rows(doc, selections, 10)
    assert list(rows[0]) == ["index", "selected", "reason", "trafilatura", "newspaper4k", "readability", "article"]
    for row, selection in zip(rows, selections, strict=True):
        assert row["article"] == f"a{selection.index}"
        assert row["selected"] == selection.selected
        assert row["reason"] == selection.reason.value
        for candidate in selection.candidates:
            assert row[candidate.name] == round(float(candidate.score), 4)
    json.dumps(rows)  # a table artifact must be JSON


@pytest.mark.parametrize(
    ("kind", "cells"),
    [
        pytest.param("single", ("unavailable", None, "unavailable"), id="single-candidate-has-no-score"),
        pytest.param("none", ("unavailable", "unavailable", "unavailable"), id="all-unavailable"),
        pytest.param("no-consensus", (None, None, None), id="no-consensus-no-scores"),
        pytest.param("degraded", (1.0, 1.0, "unavailable"), id="degraded-pool-scored"),
    ],
)
def test_a_score_cell_says_why_there_is_no_score(kind: str, cells: tuple[Any, ...]) -> None:
    row = article_row(KINDS[kind], sc.select_article(KINDS[kind]))
    assert tuple(row[name] for name in sc.EXTRACTORS) == cells


def test_columns_no_shown_row_fills_take_no_space() -> None:
    articles = [KINDS["no-consensus"], KINDS["no-consensus"]]
    rows = score_rows({"articles": articles}, sc.select_articles(articles), 10)
    assert list(rows[0]) == ["index", "selected", "reason"]  # no id, no url, no score


def test_a_column_one_row_fills_is_kept_for_every_row() -> None:
    articles = [{"url": "https://example.org/a", **KINDS["top-score"]}, dict(KINDS["top-score"])]
    rows = score_rows({"articles": articles}, sc.select_articles(articles), 10)
    assert [row["article"] for row in rows] == ["example.org/a", None]


@pytest.mark.parametrize(
    ("article", "label"),
    [
        pytest.param({"id": "a1", "url": "https://example.org/x"}, "a1", id="id-first"),
        pytest.param({"id": 7}, "7", id="numeric-id"),
        pytest.param({"id": None, "url": "https://example.org/x"}, "example.org/x", id="null-id-url-instead"),
        pytest.param({"id": "", "url": "http://www.example.org/"}, "example.org/", id="empty-id-www-dropped"),
        pytest.param({"url": "https://example.org/?a=1&b=2"}, "example.org/?a=1&b=2", id="ampersand-kept-as-is"),
        pytest.param({"url": "https://e.org/<b> x"}, "e.org/%3Cb%3E%20x", id="url-unsafe-percent-encoded"),
        pytest.param({"id": "a\nb"}, "a b", id="one-line"),
        pytest.param({"title": "T"}, None, id="nothing-to-name-it"),
        pytest.param({"id": "0123456789" * 7}, "012345678901…90123456789", id="long-id-shortened"),
    ],
)
def test_article_labels(article: dict[str, Any], label: str | None) -> None:
    assert article_label(article) == label


@given(st.text(max_size=200), st.integers(min_value=3, max_value=80))
def test_shorten_fits_and_keeps_both_ends(text: str, limit: int) -> None:
    short = shorten(text, limit)
    if len(text) <= limit:
        assert short == text
        return
    assert len(short) == limit
    head, tail = limit // 2, (limit - 1) // 2  # the start gets the odd character
    assert short[head] == "…"
    assert text.startswith(short[:head]) and text.endswith(short[head + 1 :]) and len(short[head + 1 :]) == tail


@given(st.text(max_size=100))
def test_display_url_never_leaves_markdown_or_html_syntax(rest: str) -> None:
    shown = display_url("https://" + rest)
    assert not set(shown) & set('<>"`\\ \n')
    assert not shown.startswith(("https://", "www."))


_article = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.none(), st.text(max_size=80), st.integers()),
        "url": st.one_of(st.none(), st.text(max_size=120).map(lambda s: "https://" + s)),
        "trafilatura": st.sampled_from([{"text": WORDS}, {"text": OTHER}, {"text": ""}, None]),
        "newspaper4k": st.sampled_from([{"text": WORDS}, {"text": THIRD}, {"text": WORDS, "error": "e"}]),
        "readability": st.sampled_from([{"cleaned_text": WORDS + " x y z"}, {"cleaned_text": OTHER}]),
    },
)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(_article, max_size=12), st.integers(min_value=0, max_value=15))
def test_any_table_has_at_most_eight_aligned_columns(articles: list[dict[str, Any]], max_rows: int) -> None:
    rows = score_rows({"articles": articles}, sc.select_articles(articles), max_rows)
    assert len(rows) == min(len(articles), max_rows)
    columns = [list(row) for row in rows]
    assert all(c == columns[0] for c in columns)
    if rows:
        assert len(columns[0]) <= 8
        assert columns[0] == [c for c in TABLE_COLUMNS if c in columns[0]]
        assert {"index", "selected", "reason"} <= set(columns[0])
        assert all(any(row[c] is not None for row in rows) for c in columns[0])
        labels = [row["article"] for row in rows if row.get("article") is not None]
        assert all(len(label) <= ARTICLE_LABEL_CHARS for label in labels)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(_article, max_size=14), st.integers(min_value=1, max_value=5), st.integers(min_value=0, max_value=15))
def test_chunks_give_the_evidence_of_the_whole(articles: list[dict[str, Any]], size: int, max_rows: int) -> None:
    selections = sc.select_articles(articles)
    parts = []
    for start in range(0, len(articles), size):
        stop = min(start + size, len(articles))
        shown = max(0, min(stop, max_rows) - start)
        rows = [article_row(articles[i], selections[i]) for i in range(start, start + shown)]
        parts.append((rows, close_call_entries(articles[start:stop], selections[start:stop])))
    assert merge_evidence(parts, max_rows) == batch_evidence({"articles": articles}, selections, max_rows)


def test_align_rows_keeps_the_column_order() -> None:
    rows = align_rows([{"readability": 0.5, "index": 0, "selected": "a"}, {"index": 1, "selected": "b", "reason": "r"}])
    assert [list(row) for row in rows] == [["index", "selected", "reason", "readability"]] * 2


# --- the closest calls --------------------------------------------------------------------------


def test_close_calls_are_the_ties_and_the_fallbacks() -> None:
    articles = [{"id": kind, **art} for kind, art in KINDS.items()]
    selections = sc.select_articles(articles)
    entries = close_call_entries(articles, selections)
    assert [e["article"] for e in entries] == ["tie-priority", "no-consensus", "none", "degraded"]
    assert {e["reason"] for e in entries} <= {r.value for r in CLOSE_CALL_REASONS}
    tie = entries[0]
    assert tie["tie_pool"] == list(sc.EXTRACTORS) and tie["selected"] == "newspaper4k"
    json.dumps(entries)  # travels from a worker as plain values


def test_close_calls_are_capped_at_the_first_ones() -> None:
    articles = [KINDS["tie-priority"]] * (MAX_CLOSEST_CALLS + 5)
    entries = close_call_entries(articles, sc.select_articles(articles))
    assert [e["index"] for e in entries] == list(range(MAX_CLOSEST_CALLS))


# --- the report ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "keys"),
    [
        pytest.param({"id": "a1", "url": "u&v"}, ["index", "id", "url"], id="id-and-url"),
        pytest.param({"url": "u"}, ["index", "url"], id="url-only"),
        pytest.param({"id": 3, "title": "T"}, ["index", "id"], id="numeric-id-no-title"),
        pytest.param({"id": None}, ["index"], id="null-id-left-out"),
        pytest.param({}, ["index"], id="neither"),
    ],
)
def test_report_lines_name_the_article(fields: dict[str, Any], keys: list[str]) -> None:
    article = {**fields, **KINDS["top-score"]}
    selection = sc.select_article(article, 4)
    entry = report_entry(article, selection)
    explanation = selection.to_dict()
    assert list(entry) == [*keys, *[k for k in explanation if k != "index"]]
    assert entry["index"] == 4
    assert all(entry[k] == fields[k] for k in keys[1:])  # whole, not shortened
    assert {k: v for k, v in entry.items() if k not in keys[1:]} == explanation
