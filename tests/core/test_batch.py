"""The pieces of ``parse_batch`` that a document checked piece by piece reuses (:mod:`selection_core.batch`).

``parse_batch``'s own refusals are pinned in ``tests/storage/test_batch_io.py``;
the run-by-run refusal built from these pieces in ``tests/storage/test_refusal.py``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selection_core import InvalidBatchError, parse_batch
from selection_core.batch import (
    MAX_DEPTH,
    TextPoint,
    check_exact,
    check_start,
    count_keys,
    exact_tree,
    shifted_json_error,
    top_values,
    utf8_error,
    walk_values,
)

SOURCE = "in/batch.json"
PROFILE = settings(max_examples=300, derandomize=True, database=None, deadline=None)


def refusal(data: bytes) -> str:
    with pytest.raises(InvalidBatchError) as info:
        parse_batch(data, SOURCE)
    return str(info.value)


@PROFILE
@given(st.lists(st.text(st.sampled_from("a\n\ré😀\t"), max_size=8), min_size=1, max_size=5))
def test_text_point_of_pieces_is_the_point_of_their_whole(pieces: list[str]) -> None:
    whole = "".join(pieces)
    data = whole.encode()
    point = TextPoint()
    for piece in pieces:
        point = point.advance(piece.encode())
    assert point == TextPoint().advance(data)
    assert (point.byte, point.char, point.line) == (len(data), len(whole), whole.count("\n") + 1)
    assert (point.line_byte, point.line_char) == (data.rfind(b"\n") + 1, whole.rfind("\n") + 1)


def test_text_point_reads_a_span_and_reports_bad_utf8_from_its_start() -> None:
    data = b"xx\xc3\xa9\nab\xffyy"
    assert TextPoint().advance(data, 2, 7) == TextPoint(byte=5, char=4, line=2, line_byte=3, line_char=2)
    with pytest.raises(UnicodeDecodeError) as info:
        TextPoint().advance(data, 2)
    assert info.value.start == 5  # data[7], counted from data[2]


@pytest.mark.parametrize(
    "head, piece",
    [
        pytest.param(b'{"a": "\xc3\xa9\xf0\x9f\x98\x80", "articles": [', b'{"b": tru}', id="line-1"),
        pytest.param(b'{"a": "\xc3\xa9",\n "articles": [', b'{"b": 1}, {"c": 1.}', id="line-2-same-line"),
        pytest.param(b'{"articles": [', b'{\n "\xc3\xa9": "\xf0\x9f\x98\x80",\n "c": [1 2]}', id="newline-in-piece"),
        pytest.param(b'{"articles": [', b'{"s": "\\ud800"}', id="lone-surrogate"),
        pytest.param(b'{"articles": [', b"1e400", id="infinity"),
        pytest.param(b'{"articles": [', b"[" * 1100 + b"]" * 1100, id="depth"),
    ],
)
def test_a_json_error_shifted_from_a_piece_is_the_whole_documents(head: bytes, piece: bytes) -> None:
    wrapper = b'{"articles":['
    with pytest.raises(orjson.JSONDecodeError) as info:
        orjson.loads(wrapper + piece + b"]}")
    shifted = shifted_json_error(SOURCE, info.value, TextPoint().advance(wrapper), TextPoint().advance(head))
    assert str(shifted) == refusal(head + piece + b"]}")


@pytest.mark.parametrize(
    "head, piece",
    [
        pytest.param(b'{"articles": [', b'{"a": "caf\xe9"}', id="line-1"),
        pytest.param(b'{"x": "\xc3\xa9",\n "articles": [', b'{"a": "\xed\xa0\x80"}', id="line-2"),
        pytest.param(b'{"articles": [', b'{\n "a":\n "\xc3"}', id="newline-in-piece"),
    ],
)
def test_invalid_utf8_in_a_piece_is_placed_in_the_whole_document(head: bytes, piece: bytes) -> None:
    buf = b"<<" + piece
    bad = 2 + next(i for i in range(len(piece)) if _bad_at(piece, i))
    placed = utf8_error(SOURCE, buf, bad, 2, TextPoint().advance(head))
    assert str(placed) == refusal(head + piece + b"]}")


def _bad_at(data: bytes, i: int) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        return exc.start == i
    return False


@pytest.mark.parametrize(
    "data",
    [b"\xef\xbb\xbf{}", '{"articles": []}'.encode("utf-16"), b"{\x00}"],
    ids=["bom", "utf-16", "nul"],
)
def test_the_first_bytes_decide_as_the_whole_does(data: bytes) -> None:
    with pytest.raises(InvalidBatchError) as info:
        check_start(data[:3], SOURCE)
    assert str(info.value) == refusal(data)


def test_walk_finds_the_last_value_too_deep_first_with_whole_batch_indices() -> None:
    deep: Any = [0]
    for _ in range(MAX_DEPTH):
        deep = [deep]
    doc = {"articles": [{"a": 1}, {"a": deep}, {"a": deep}, {"a": 0.5}]}
    walk = walk_values(top_values(doc.items(), first_index=10))
    assert walk.too_deep == "$.articles[12]"
    shallow = walk_values(top_values({"k": {"a": 0.5}, "articles": [{"b": {}}]}.items()))
    assert shallow == type(shallow)(members=2, has_float=True, too_deep=None)


def test_exact_problems_are_found_in_document_order() -> None:
    tree = exact_tree(b'{"a": [1, {"k": 1, "k": 2}], "b": 1e-400}', SOURCE)
    with pytest.raises(InvalidBatchError, match=r"\$\.a\[1\] has the key"):
        check_exact([(tree, ())], SOURCE)
    with pytest.raises(InvalidBatchError, match=r"\$\.b is the number 1e-400"):
        check_exact([(tree["b"], ("b",)), (tree["a"], ("a",))], SOURCE)


@pytest.mark.parametrize(
    "data, count",
    [
        pytest.param(b'{"a": 1, "b": ":x"}', 3, id="fast-counts-a-string-starting-with-colon"),
        pytest.param(b'{"a" : 1, "a": 2}', 2, id="space-before-colon-exact"),
        pytest.param(b'{"a": "\\":", "b": 1}', 2, id="escaped-quote-before-colon-exact"),
    ],
)
def test_key_counts_are_at_least_the_members(data: bytes, count: int) -> None:
    assert count_keys(data) == count >= len(orjson.loads(data))
