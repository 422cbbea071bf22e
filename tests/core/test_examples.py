"""The examples that once were the core's docstring examples."""

from __future__ import annotations

import sys

import pytest

import selection_core as sc
from selection_core import kernel
from selection_core.batch import envelope_parts, merge_summaries, parse_batch, render_articles, summarize
from selection_core.errors import InvalidBatchError, error_line
from selection_core.evidence import (
    align_rows,
    article_label,
    article_row,
    counts_text,
    display_url,
    read_as_text,
    report_entry,
    shorten,
)
from selection_core.formats import format_of
from selection_core.jsonl import is_jsonl, parse_lines, render_lines
from selection_core.normalize import nfkc_form, normalize, tokenize
from selection_core.progress import PercentProgress
from selection_core.select import select_article
from selection_core.shingles import shingles, text_shingles
from selection_core.tokens import find_mojibake_markers


def test_package_example() -> None:
    doc = sc.parse_batch(b'{"articles": [{"newspaper4k": {"text": "a b c"}}]}')
    assert [s.selected for s in sc.select_articles(doc["articles"])] == ["newspaper4k"]


def test_use_kernel() -> None:
    was = kernel.KERNEL is not None
    assert kernel.use_kernel(False) is False
    assert kernel.use_kernel(was) == was


def test_fold_table_entries() -> None:
    table, _ = kernel.build_fold_table()
    assert [int.from_bytes(table[4 * ord(c) : 4 * ord(c) + 4], sys.byteorder) for c in "aA7-"] == [97, 97, 55, 0]


def test_marker_table_entries() -> None:
    table = kernel.build_marker_table()
    assert (table[ord("\u00c3")], table[ord("a")]) == (1, 0)


@pytest.mark.skipif(kernel.KERNEL is None, reason="the compiled kernel is not in use")
def test_kernel_examples() -> None:
    counts, regions = kernel.article_counts(("A b c d e F", "b c d e f", None))  # type: ignore[misc]
    assert counts == (6, 5, 0) and regions == (0, 1, 0, 1, 0, 0, 0, 0)
    assert kernel.marker_windows("caf\u00c3\u00a9 ok" + " " * 40 + "\u00c3") == [(0, 10), (42, 55)]


def test_kernel_not_in_use_is_refused() -> None:
    was = kernel.KERNEL is not None
    kernel.use_kernel(False)
    try:
        with pytest.raises(RuntimeError, match="not in use"):
            kernel.article_counts(("a",))
        with pytest.raises(RuntimeError, match="not in use"):
            kernel.marker_windows("a")
    finally:
        kernel.use_kernel(was)


def test_batch_examples() -> None:
    assert parse_batch(b'{"articles": [], "run": 7}') == {"articles": [], "run": 7}
    assert (
        render_articles([{"a": 1}, {"b": [2]}])
        == b'{\n      "a": 1\n    },\n    {\n      "b": [\n        2\n      ]\n    }'
    )
    assert envelope_parts({"run": 7, "articles": []}, True) == (
        b'{\n  "run": 7,\n  "articles": [\n    ',
        b"\n  ]\n}\n",
    )
    assert merge_summaries([]) == summarize([])


def test_jsonl_examples() -> None:
    assert (is_jsonl("crawl_extracted.jsonl"), is_jsonl("CRAWL.JSONL"), is_jsonl("crawl_extracted.json")) == (
        True,
        True,
        False,
    )
    assert parse_lines(b'{"id": "a1"}\n{"id": "a2"}\r\n') == [{"id": "a1"}, {"id": "a2"}]
    assert parse_lines(b"") == []
    with pytest.raises(InvalidBatchError, match=r"^b\.jsonl: line 2 is blank; remove it \("):
        parse_lines(b'{"id": 1}\n\n{"id": 2}\n', "b.jsonl")
    assert render_lines([{"id": "é", "n": [1, 2]}, {}]) == b'{"id":"\xc3\xa9","n":[1,2]}\n{}\n'
    assert (format_of("crawl_extracted.jsonl").name, format_of("crawl_extracted.json").name) == ("JSON Lines", "JSON")


def test_error_line() -> None:
    assert error_line(InvalidBatchError("b.json: not JSON; fix it")) == "b.json: not JSON; fix it"
    assert (error_line(KeyError("articles")), error_line(RuntimeError())) == ("KeyError: 'articles'", "RuntimeError")


def test_evidence_examples() -> None:
    assert counts_text({"trafilatura": 1, "newspaper4k": 10}) == "trafilatura 1, newspaper4k 10"
    assert shorten("0123456789abcdef", 9) == "0123…cdef"
    assert display_url("https://www.example.org/a?b=1&c=<2>") == "example.org/a?b=1&c=%3C2%3E"
    assert article_label({"id": "f" * 64, "url": "https://example.org/a"}) == "ffffffffffff…fffffffffff"
    assert article_label({"url": "https://www.example.org/news?id=1&lang=en"}) == "example.org/…d=1&lang=en"
    article = {"id": "a1", "newspaper4k": {"text": "a b c"}}
    row = article_row(article, select_article(article))
    assert (row["article"], row["reason"], row["trafilatura"], row["newspaper4k"]) == (
        "a1",
        "single_candidate",
        "unavailable",
        None,
    )
    rows = [{"index": 0, "article": None, "selected": "a"}, {"index": 1, "article": None, "selected": "b"}]
    assert align_rows(rows) == [{"index": 0, "selected": "a"}, {"index": 1, "selected": "b"}]
    entry = report_entry({"url": "u", "newspaper4k": {"text": "a"}}, select_article({"newspaper4k": {"text": "a"}}))
    assert list(entry) == [
        "index",
        "url",
        "selected_extractor",
        "reason",
        "pool",
        "consensus_size",
        "tie_pool",
        "candidates",
    ]
    assert read_as_text(3) == "in 3 chunks of articles, one after the other in this process"


def test_normalize_examples() -> None:
    assert nfkc_form("Caf&eacute; \ufb01ne\nok") == "Café fine\nok"
    assert normalize("Caf&eacute; <b>NEWS</b> ![logo](x.png) [read](http://a)") == "café  news    read"
    assert tokenize("Hello, WORLD! It's 2024.") == ["hello", "world", "it", "s", "2024"]


def test_percent_progress() -> None:
    seen: list[int] = []
    progress = PercentProgress(seen.append)
    for done in range(0, 401):
        progress(done, 400)
    assert (len(seen), seen[:3], seen[-1]) == (101, [0, 1, 2], 100)


def test_select_example() -> None:
    a = {
        "newspaper4k": {"text": "one two three four five six"},
        "trafilatura": {"text": "one two three four five six"},
        "readability": {"cleaned_text": "menu one two three four five six login"},
    }
    s = select_article(a)
    assert (s.selected, s.reason.value) == ("newspaper4k", "consensus_tie_priority")


def test_shingles_examples() -> None:
    assert sorted(shingles(["a", "b", "c"])) == ["a b c"]
    assert len(shingles(["a", "b", "c", "d", "e", "a", "b", "c", "d", "e"])) == 5
    count, found = text_shingles("one two three\nfour five six")
    assert (count, sorted(found)) == (6, ["one two three four five", "two three four five six"])


def test_find_mojibake_markers() -> None:
    markers, width = find_mojibake_markers()
    assert markers is None or (bool(markers.search("caf\u00c3\u00a9")) and width > 0)
