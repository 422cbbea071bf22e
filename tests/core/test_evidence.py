"""The run's evidence for people (:mod:`selection_core.evidence`): the scores table, the closest calls,
the summary markdown and the report lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selection_core as sc
from selection_core.evidence import (
    ARTICLE_LABEL_CHARS,
    CLOSE_CALL_REASONS,
    CLOSEST_CALLS_ARTIFACT_KEY,
    MAX_CLOSEST_CALLS,
    TABLE_COLUMNS,
    align_rows,
    article_label,
    article_row,
    batch_evidence,
    close_call_entries,
    closest_calls_markdown,
    display_url,
    merge_evidence,
    report_entry,
    score_rows,
    scores_description,
    shorten,
    summary_markdown,
)
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


@settings(max_examples=60, deadline=None)
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


@settings(max_examples=40, deadline=None)
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


def test_scores_description_states_the_cap() -> None:
    assert "capped at max_table_rows=2" in scores_description("b.json", 2, 7, 2)
    assert "report_path" in scores_description("b.json", 2, 7, 2)
    assert "report_path" not in scores_description("b.json", 7, 7, 200)


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


def test_the_closest_calls_markdown_states_the_cap_and_the_counts() -> None:
    articles = [{"url": "https://example.org/?a=1&b=<2>", **KINDS["none"]}]
    articles += [{"id": f"x|{i}", **KINDS["tie-priority"]} for i in range(MAX_CLOSEST_CALLS + 3)]
    selections = sc.select_articles(articles)
    text = closest_calls_markdown("b.json", close_call_entries(articles, selections), sc.summarize(selections))
    lines = text.split("\n")
    assert lines[0] == "# Closest calls: b.json"
    assert f"{MAX_CLOSEST_CALLS} of the {MAX_CLOSEST_CALLS + 4} decisions" in lines[2]
    assert f"at most {MAX_CLOSEST_CALLS} are listed" in lines[2]
    assert lines[4] == "| Index | Selected | Reason | trafilatura | newspaper4k | readability | Article |"
    assert lines[6] == (
        "| 0 | newspaper4k | all_unavailable | unavailable | unavailable | unavailable | exampl…C2%3E |"
    )
    assert lines[7] == (
        "| 1 | newspaper4k | consensus_tie_priority | **1.0000 / 26** | **1.0000 / 26** | **1.0000 / 26** | x\\|0 |"
    )
    assert len([line for line in lines if line.startswith("| ") and line[2].isdigit()]) == MAX_CLOSEST_CALLS


def test_no_close_calls_says_so() -> None:
    selections = sc.select_articles([KINDS["top-score"]])
    text = closest_calls_markdown("b.json", [], sc.summarize(selections))
    assert "No ties or fallbacks among the 1 articles" in text


# --- the summary --------------------------------------------------------------------------------


def _summary_text(report_path: Path | None = None, input_path: str = "/data/b_extracted.json") -> str:
    doc, selections = _selections(3)
    return summary_markdown(
        summary=sc.summarize(selections),
        input_path=Path(input_path),
        input_sha256="a" * 64,
        output_path=Path("/data/b_extracted_selected.json"),
        output_sha256="b" * 64,
        report_path=report_path,
        versions={"selection_core": sc.__version__, "ftfy": "6.3.1", "regex": "2025.1.1"},
        shown_rows=3,
        max_rows=200,
    )


def test_summary_markdown_has_counts_paths_hashes_and_versions() -> None:
    doc, selections = _selections(3)
    summary = sc.summarize(selections)
    text = _summary_text()
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
    assert f"(listed in `{CLOSEST_CALLS_ARTIFACT_KEY}`)" in text


def test_every_summary_table_has_a_header() -> None:
    lines = _summary_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            header = [cell.strip() for cell in lines[i - 1].strip("|").split("|")]
            assert all(header), lines[i - 1]


def test_summary_paths_are_code_and_escaped_for_the_table() -> None:
    text = _summary_text(Path("/r/<x>|y.jsonl"), "/data/a`b_extracted.json")
    assert "| Report (JSON Lines) | `/r/<x>\\|y.jsonl` |" in text
    assert "| Input | ``/data/a`b_extracted.json`` |" in text
    assert text.startswith("# Content selection: a\\`b_extracted.json\n")


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
