"""The streaming scanner (``selection_core.layout``): exact chunks at any read size, refusals with their place.

The scanner decides nothing about validity, but every chunk it reports must hold exactly
its articles, it must never refuse a valid batch, and what it and the chunks' own parses
accept together must be what the whole-document parse accepts. Checked on the real batch,
on Hypothesis documents in any JSON formatting and read size, and on mutated bytes.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selection_core as sc
from selection_core import layout
from selection_core.formats import JSON_BATCH
from tests.support import DATA, examples
from tests.support.batch_strategies import batch_documents

GOLDEN = DATA / "aeb_batch_extracted.json"
SOURCE = "in/b.json"


def _scan(data: bytes, max_bytes: int = 1 << 20, max_articles: int | None = None, read_size: int = 7) -> layout.Layout:
    return layout.scan(io.BytesIO(data).read, SOURCE, max_bytes, max_articles, read_size=read_size)


def _streamed(data: bytes, **limits: Any) -> list[dict[str, Any]]:
    """The articles as the engine reads them: the scan, the envelope's parse, each chunk's parse."""
    found = _scan(data, **limits)
    shift = found.close - found.open - 1
    sc.parse_batch(found.envelope, SOURCE, lambda b: b if b <= found.open else b + shift)
    articles: list[dict[str, Any]] = []
    for chunk in found.chunks:
        wrapped = layout.CHUNK_PREFIX + data[chunk.begin : chunk.end] + layout.CHUNK_SUFFIX
        articles += JSON_BATCH.parse(wrapped, SOURCE, chunk)
    return articles


def _check_chunks(data: bytes, found: layout.Layout, max_bytes: int, max_articles: int | None) -> None:
    doc = orjson.loads(data)
    assert found.articles == len(doc["articles"])
    assert orjson.loads(found.envelope) == {k: ([] if k == "articles" else v) for k, v in doc.items()}
    stop = 0
    for chunk in found.chunks:
        assert chunk.start == stop and len(chunk) > 0
        assert len(chunk) == 1 or chunk.end - chunk.begin <= max_bytes
        assert max_articles is None or len(chunk) <= max_articles
        inner = orjson.loads(b"[" + data[chunk.begin : chunk.end] + b"]")
        assert inner == doc["articles"][chunk.start : chunk.stop]
        stop = chunk.stop


@pytest.mark.parametrize("read_size", [1, 4096, 1 << 20])
def test_the_real_batch_is_cut_into_chunks_within_their_bounds(read_size: int) -> None:
    data = GOLDEN.read_bytes()
    found = _scan(data, 200_000, 50, read_size)
    assert found.articles == 181
    _check_chunks(data, found, 200_000, 50)


@settings(max_examples=examples(300), deadline=None)
@given(
    document=batch_documents(),
    read_size=st.integers(1, 64),
    max_bytes=st.integers(1, 200),
    max_articles=st.none() | st.integers(1, 4),
)
def test_any_document_is_cut_exactly_at_any_read_size(
    document: tuple[bytes, dict[str, Any]], read_size: int, max_bytes: int, max_articles: int | None
) -> None:
    data, doc = document
    found = _scan(data, max_bytes, max_articles, read_size)
    _check_chunks(data, found, max_bytes, max_articles)
    assert _streamed(data, max_bytes=max_bytes) == doc["articles"]


@pytest.mark.slow
@settings(max_examples=examples(600), deadline=None)
@given(document=batch_documents(), data=st.data())
def test_mutated_bytes_are_accepted_exactly_when_the_whole_parse_accepts_them(
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
    try:
        whole: list[dict[str, Any]] | None = sc.parse_batch(mutated)["articles"]
    except sc.InvalidBatchError:
        whole = None
    try:
        streamed: list[dict[str, Any]] | None = _streamed(mutated, max_bytes=data.draw(st.integers(1, 100)))
    except sc.InvalidBatchError as exc:
        assert str(exc).startswith(f"{SOURCE}: ") and "\n" not in str(exc)
        streamed = None
    assert streamed == whole


@pytest.mark.parametrize(
    "data, message",
    [
        pytest.param(b"", "the file is empty", id="empty"),
        pytest.param(b"  \n", "holds only whitespace", id="whitespace"),
        pytest.param(b"[]", r"the root is an array \(byte offset 0\)", id="root-array"),
        pytest.param(b"# x", r"not valid JSON at byte offset 0 \(it starts with '#'\)", id="not-json"),
        pytest.param(b"true story", "not valid JSON at byte offset 5: unexpected content", id="plain-text-true"),
        pytest.param(b'  "\xc3\xa9" x', "not valid JSON at byte offset 7", id="plain-text-after-a-string"),
        pytest.param(b"nothing", "not valid JSON at byte offset 0: invalid literal", id="plain-text-nothing"),
        pytest.param(b" null ", r"the root is null \(byte offset 1\)", id="root-null"),
        pytest.param(b'{"run": 1}', 'no "articles" key', id="no-articles"),
        pytest.param(b"{}", 'no "articles" key', id="empty-object"),
        pytest.param(
            b'{"articles": [], "articles": []}',
            r'"articles" more than once \(again at byte offset 17\)',
            id="articles-twice",
        ),
        pytest.param(b'{"articles": [], "art\\u0069cles": []}', "more than once", id="articles-twice-once-escaped"),
        pytest.param(b'{"articles": {}}', r"\$.articles is an object \(byte offset 13\), not an array", id="object"),
        pytest.param(b'{"articles": 3}', r"\$.articles is a number", id="articles-number"),
        pytest.param(
            b'{"bad\\escape": 1, "articles": []}',
            "key at byte offset 1 is not a valid JSON string",
            id="bad-escape-in-key",
        ),
        pytest.param(b'{"articles": []} x', "more after the root object, at byte offset 17", id="trailing-garbage"),
        pytest.param(
            b'{"articles": [] ',
            r"expected ',' or '}' in the root object at byte offset 16, the file ends",
            id="unclosed-root",
        ),
        pytest.param(
            b'{"articles": [{"a": "open}]}',
            r"\$.articles\[0\], from byte offset 14, never ends",
            id="unterminated-string",
        ),
        pytest.param(
            b'{"articles": [{"a": [1}]}', r"\$.articles\[0\], from byte offset 14, never ends", id="mismatched-brackets"
        ),
        pytest.param(
            b'{"articles": [{"a": 1} {"b": 2}]}',
            r"expected ',' or '\]' after \$.articles\[0\] at byte "
            r"offset 23, found '\{'",
            id="missing-comma",
        ),
        pytest.param(
            b'{"articles": [{"a": 1},, {"b": 2}]}',
            r"expected \$.articles\[1\] at byte offset 23, found ','",
            id="double-comma",
        ),
        pytest.param(
            b'{"articles": [{"a": 1},]}',
            r"expected \$.articles\[1\] at byte offset 23, found '\]'",
            id="trailing-comma",
        ),
        pytest.param(b'{"articles" [1]}', r"expected ':' after the key at byte offset 12", id="no-colon"),
    ],
)
def test_what_cannot_be_delimited_is_refused_with_its_place(data: bytes, message: str) -> None:
    with pytest.raises(sc.InvalidBatchError, match=message) as info:
        _scan(data, read_size=3)
    assert str(info.value).startswith(f"{SOURCE}: ")


def test_a_root_key_spelled_with_escapes_is_read_for_what_it_says() -> None:
    data = b'{"\\"run\\"": 1, "art\\u0069cles": [{"a": 1}]}'
    _check_chunks(data, _scan(data), 1 << 20, None)


def test_escaped_quotes_and_backslash_runs_end_strings_where_json_does() -> None:
    data = b'{"articles": [{"t": "a\\\\"}, {"t": "b\\\\\\"]"}, {"t": "\\\\\\\\"}]}'
    found = _scan(data, 1)
    _check_chunks(data, found, 1, None)
    assert found.articles == 3


def test_a_huge_article_costs_a_number_of_refills_logarithmic_in_its_size() -> None:
    big = b'{"articles": [{"text": "' + b"x" * 3_000_000 + b'"}, {"a": 1}]}'
    reads: list[int] = []
    source = io.BytesIO(big)

    def read(n: int) -> bytes:
        reads.append(n)
        return source.read(n)

    found = layout.scan(read, SOURCE, 1 << 20, read_size=1024)
    assert found.articles == 2
    assert len(reads) < 40  # a fixed 1 KiB read would take about 3000, each copying and rescanning


def test_json_lines_are_cut_into_chunks_of_whole_lines() -> None:
    data = b'{"a": 1}\n{"b": 2}\r\n\n{"c": 3}'
    found = layout.scan(io.BytesIO(data).read, "b.jsonl", 12, lines=True, read_size=2)
    assert [(c.start, c.stop) for c in found.chunks] == [(0, 1), (1, 3), (3, 4)]
    assert b"".join(data[c.begin : c.end] for c in found.chunks) == data
    assert layout.scan(io.BytesIO(b"").read, "b.jsonl", 12, lines=True).chunks == ()


def test_a_chunk_is_validated_with_the_depths_of_the_whole() -> None:
    deep = b"[" * 251 + b"]" * 251  # an article holding this is at the deepest orjson writes
    article = b'{"x": ' + deep + b"}"
    assert (
        _streamed(b'{"articles": [' + article + b"]}")
        == sc.parse_batch(b'{"articles": [' + article + b"]}")["articles"]
    )
    with pytest.raises(sc.InvalidBatchError, match=r"\$.articles\[0\] is nested more than"):
        _streamed(b'{"articles": [{"x": [' + deep + b"]}]}")


@settings(max_examples=examples(200), deadline=None)
@given(document=batch_documents(), cuts=st.lists(st.integers(1, 5), max_size=4))
def test_envelope_and_rendered_chunks_write_the_bytes_of_the_whole(
    document: tuple[bytes, dict[str, Any]], cuts: list[int]
) -> None:
    _, doc = document
    articles = doc["articles"]
    chunks, at = [], 0
    for size in [*cuts, len(articles)]:
        if at < len(articles):
            chunks.append(sc.render_articles(articles[at : at + size]))
            at += size
    head, tail = sc.envelope_parts(doc, bool(articles))
    assert head + sc.ARTICLE_SEPARATOR.join(chunks) + tail == sc.dump_batch(doc)
