"""The checks of ``selection_core.batch`` that a batch read chunk by chunk uses.

``parse_batch``'s own refusals are pinned in ``tests/storage/test_batch_io.py``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import settings

from selection_core import InvalidBatchError, parse_batch
from selection_core.batch import (
    MAX_DEPTH,
    check_exact,
    count_keys,
    exact_tree,
    parse_chunk,
    top_values,
    walk_values,
)
from selection_core.layout import CHUNK_PREFIX, CHUNK_SUFFIX, Chunk, check_start
from tests.support import examples

SOURCE = "in/batch.json"
PROFILE = settings(max_examples=examples(300), derandomize=True, database=None, deadline=None)


def refusal(data: bytes) -> str:
    with pytest.raises(InvalidBatchError) as info:
        parse_batch(data, SOURCE)
    return str(info.value)


@pytest.mark.parametrize(
    "article, bad",
    [
        pytest.param(b'{"a": tru}', b"tru}", id="syntax"),
        pytest.param(b'{"t": "\xc3\xa9\xff"}', b"\xff", id="invalid-utf8-after-two-byte-char"),
        pytest.param('{"t": "\u00e9\u00e9", "x": nan}'.encode(), b"n", id="syntax-after-non-ascii"),
    ],
)
def test_a_bad_article_of_a_chunk_is_named_with_its_index_and_the_files_byte_offset(article: bytes, bad: bytes) -> None:
    data = b'{"articles": [{"ok": 1},\n ' + article + b"]}"
    begin = data.index(b"{", 1 + data.index(b"["))
    chunk = Chunk(5, 7, begin, len(data) - 2)  # the chunk's first article is article 5 of the batch
    wrapped = CHUNK_PREFIX + data[begin : len(data) - 2] + CHUNK_SUFFIX
    with pytest.raises(InvalidBatchError) as info:
        parse_chunk(wrapped, SOURCE, chunk)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}: $.articles[6] is not valid")
    offset = int(message.split("byte offset ")[1].split(":")[0].split(";")[0])
    assert data[offset : offset + len(bad)] == bad


def test_a_chunks_exact_problems_name_their_place_in_the_whole_batch() -> None:
    wrapped = CHUNK_PREFIX + b'{"a": 1}, {"b": {"k": 1, "k": 2}}' + CHUNK_SUFFIX
    with pytest.raises(InvalidBatchError, match=r"\$\.articles\[41\]\.b has the key \"k\" more than once"):
        parse_chunk(wrapped, SOURCE, Chunk(40, 42, 100, 133))
    wrapped = CHUNK_PREFIX + b'{"a": 1e-400}' + CHUNK_SUFFIX
    with pytest.raises(InvalidBatchError, match=r"\$\.articles\[3\]\.a is the number 1e-400"):
        parse_chunk(wrapped, SOURCE, Chunk(3, 4, 0, 13))
    assert parse_chunk(CHUNK_PREFIX + b'{"a": 0.5}' + CHUNK_SUFFIX, SOURCE, Chunk(0, 1, 0, 10)) == [{"a": 0.5}]


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
    tree = exact_tree(b'{"a": [1, {"k": 1, "k": 2}], "b": 1e-400}')
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
