"""The layout scan (``selection_core.layout``): exact spans, the same in C and in Python.

The scan decides nothing about validity, but every span it reports must be
exactly one value of the document, and where it cannot be sure it must say so
(None), so that the whole-document parse decides. Checked on the real batch,
on Hypothesis documents written in any JSON formatting, and on mutated bytes.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selection_core as sc
from selection_core import layout
from tests.support import ROOT
from tests.support.batch_strategies import batch_documents

GOLDEN = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

needs_compiled = pytest.mark.skipif(layout.COMPILED is None, reason="the compiled scanner was not built")


def _both(data: bytes) -> tuple[Any, Any]:
    """The layout found by the pure scanner and by the compiled one (when built)."""
    pure = _pure_layout(data)
    compiled = layout.scan_layout(data) if layout.COMPILED is not None else pure
    return pure, compiled


def _pure_layout(data: bytes) -> layout.BatchLayout | None:
    saved = layout.COMPILED
    layout.COMPILED = None
    try:
        return layout.scan_layout(data)
    finally:
        layout.COMPILED = saved


def _check_spans(data: bytes, found: layout.BatchLayout) -> None:
    """Each span is exactly one article, and envelope + runs are the input bytes."""
    doc = orjson.loads(data)
    assert found.articles == len(doc["articles"])
    for start, end, article in zip(found.starts, found.ends, doc["articles"], strict=True):
        assert orjson.loads(data[start:end]) == article
    assert data[found.open : found.open + 1] == b"[" and data[found.close : found.close + 1] == b"]"
    envelope = orjson.loads(layout.envelope_bytes(data, found))
    assert envelope == {k: ([] if k == "articles" else v) for k, v in doc.items()}
    if found.articles:
        # the runs, put back between the brackets, are the array's bytes
        start, end = found.run_span(0, found.articles)
        assert data[found.open + 1 : found.close].strip(b" \t\r\n") == data[start:end]


def test_the_compiled_scanner_is_built_where_required() -> None:
    """Like the selection kernel (tests/core/test_kernel.py): where CONTENT_SELECTION_REQUIRE_KERNEL
    is set (CI), an install that silently fell back to the pure scanner is a failure."""
    if os.environ.get("CONTENT_SELECTION_REQUIRE_KERNEL", "") in ("", "0"):
        pytest.skip("CONTENT_SELECTION_REQUIRE_KERNEL is not set")
    assert layout.COMPILED is not None, "selection_core._layout was not built: is a C compiler installed?"


def test_the_real_batch_is_delimited_exactly_by_both_scanners() -> None:
    data = GOLDEN.read_bytes()
    pure, compiled = _both(data)
    assert pure == compiled
    assert pure is not None and pure.articles == 181
    _check_spans(data, pure)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(document=batch_documents())
def test_every_span_is_one_article_in_any_formatting(document: tuple[bytes, dict[str, Any]]) -> None:
    data, _ = document
    pure, compiled = _both(data)
    assert pure == compiled
    assert pure is not None
    _check_spans(data, pure)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(document=batch_documents(), data=st.data())
def test_mutated_bytes_get_the_same_answer_from_both_and_never_a_wrong_span(
    document: tuple[bytes, dict[str, Any]], data: st.DataObject
) -> None:
    raw = bytearray(document[0])
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["delete", "replace", "insert"]))
        byte = data.draw(st.sampled_from(list(b'"\\[]{},: x1')))
        if action == "delete":
            del raw[at]
        elif action == "replace":
            raw[at] = byte
        else:
            raw.insert(at, byte)
    mutated = bytes(raw)
    pure, compiled = _both(mutated)
    assert pure == compiled
    if pure is None:
        return
    try:
        whole = sc.parse_batch(mutated)
    except sc.InvalidBatchError:
        return  # the pieces' own parses refuse it (tested with the chunked flow)
    _check_spans(mutated, pure)
    assert pure.articles == len(whole["articles"])


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"[]", id="root-array"),
        pytest.param(b'{"run": 1}', id="no-articles"),
        pytest.param(b"{}", id="empty-object"),
        pytest.param(b'{"articles": [], "articles": []}', id="articles-twice"),
        pytest.param(b'{"articles": {}}', id="articles-object"),
        pytest.param(b'{"articles": 3}', id="articles-number"),
        pytest.param(b'{"articles": [], "art\\u0069cles": []}', id="articles-twice-once-escaped"),
        pytest.param(b'{"bad\\escape": 1, "articles": []}', id="bad-escape-in-key"),
        pytest.param(b'{"articles": []} x', id="trailing-garbage"),
        pytest.param(b'{"articles": [] ', id="unclosed-root"),
        pytest.param(b'{"articles": [{"a": "open}]}', id="unterminated-string"),
        pytest.param(b'{"articles": [{"a": [1}]}', id="mismatched-brackets"),
        pytest.param(b'{"articles": [{"a": 1} {"b": 2}]}', id="missing-comma"),
        pytest.param(b'{"articles": [{"a": 1},, {"b": 2}]}', id="double-comma"),
        pytest.param(b'{"articles": [{"a": 1},]}', id="trailing-comma"),
        pytest.param(b'{"articles" [1]}', id="no-colon"),
        pytest.param(b'{"articles": [' + b"[" * 5000 + b"]" * 5000 + b"]}", id="deeper-than-4096"),
    ],
)
def test_what_cannot_be_delimited_is_left_to_the_whole_parse(data: bytes) -> None:
    pure, compiled = _both(data)
    assert pure is None and compiled is None


def test_a_root_key_spelled_with_escapes_is_read_for_what_it_says() -> None:
    data = b'{"\\"run\\"": 1, "art\\u0069cles": [{"a": 1}]}'
    found = layout.scan_layout(data)
    assert found is not None and found.articles == 1
    _check_spans(data, found)


def test_escaped_quotes_and_backslash_runs_end_strings_where_json_does() -> None:
    data = b'{"articles": [{"t": "a\\\\"}, {"t": "b\\\\\\"]"}, {"t": "\\\\\\\\"}]}'
    found = layout.scan_layout(data)
    assert found is not None
    _check_spans(data, found)
    assert found.articles == 3


@needs_compiled
def test_the_compiled_value_end_matches_the_pure_one_at_every_offset() -> None:
    data = GOLDEN.read_bytes()[:20000]
    for pos in range(len(data)):
        assert layout.COMPILED.value_end(data, pos) == layout.py_value_end(data, pos), pos


def test_a_run_document_is_validated_with_the_depths_of_the_whole() -> None:
    deep = b"[" * 251 + b"]" * 251  # an article holding this is at the deepest orjson writes
    whole = b'{"articles": [{"x": ' + deep + b"}]}"
    run = layout.RUN_PREFIX + b'{"x": ' + deep + b"}" + layout.RUN_SUFFIX  # as select_chunk reads a run
    assert sc.parse_batch(whole)["articles"] == sc.parse_batch(bytes(run))["articles"]
    too_deep = b'{"x": [' + deep + b"]}"
    with pytest.raises(sc.InvalidBatchError, match="nested more than"):
        sc.parse_batch(b'{"articles": [' + too_deep + b"]}")
    with pytest.raises(sc.InvalidBatchError, match="nested more than"):
        sc.parse_batch(layout.RUN_PREFIX + too_deep + layout.RUN_SUFFIX)


def test_run_span_refuses_what_is_not_there() -> None:
    found = layout.scan_layout(b'{"articles": [{}, {}]}')
    assert found is not None and found.run_span(0, 2) == (14, 20)
    for start, stop in ((0, 0), (1, 3), (-1, 1)):
        with pytest.raises(ValueError, match="no articles"):
            found.run_span(start, stop)


@settings(max_examples=200, deadline=None)
@given(document=batch_documents(), cuts=st.lists(st.integers(1, 5), max_size=4))
def test_envelope_and_rendered_runs_write_the_bytes_of_the_whole(
    document: tuple[bytes, dict[str, Any]], cuts: list[int]
) -> None:
    _, doc = document
    articles = doc["articles"]
    runs, at = [], 0
    for size in [*cuts, len(articles)]:
        if at < len(articles):
            runs.append(sc.render_articles(articles[at : at + size]))
            at += size
    head, tail = sc.envelope_parts(doc, bool(articles))
    assert head + sc.ARTICLE_SEPARATOR.join(runs) + tail == sc.dump_batch(doc)
    assert b"".join(sc.iter_dump_batch(doc)) == sc.dump_batch(doc)
