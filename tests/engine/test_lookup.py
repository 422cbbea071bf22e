"""One article found in a batch file without loading the batch (selection_engine.lookup)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

import selection_core as sc
import selection_engine.lookup as lookup
from selection_engine import engine, select_file
from selection_engine.lookup import find_article
from selection_storage.stores import disk
from tests.support.prefect_fixtures import make_batch


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    doc = make_batch(25)
    doc["articles"][7]["id"] = 70  # a numeric id
    doc["articles"][9]["id"] = "a3"  # a second "a3": the first one is found
    path = tmp_path / "b_extracted.json"
    path.write_bytes(json.dumps(doc, indent=1).encode())
    return path


@pytest.fixture
def parsed(mocker) -> list[int]:
    """The sizes of the envelope and of every chunk read (to be parsed) while the test runs."""
    sizes: list[int] = []
    real_parse, real_read = sc.parse_batch, disk.read_span

    def parse_spy(data: bytes, *args, **kwargs):
        sizes.append(len(data))
        return real_parse(data, *args, **kwargs)

    def read_spy(*args, **kwargs):
        data = real_read(*args, **kwargs)
        sizes.append(len(data))
        return data

    mocker.patch.object(engine.sc, "parse_batch", side_effect=parse_spy)  # the envelope
    mocker.patch.object(disk, "read_span", side_effect=read_spy)  # the chunks
    return sizes


def test_by_index_only_the_chunk_that_holds_it_is_parsed(
    batch: Path, parsed: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lookup, "LOOKUP_CHUNK_ARTICLES", 4)
    found = find_article(batch, index=12)
    assert (found.index, found.total, found.article) == (12, 25, make_batch(25)["articles"][12])
    run_bytes = len(orjson.dumps(found.article)) * 2 * 4  # indented, four articles
    assert len(parsed) == 2 and max(parsed) < run_bytes < batch.stat().st_size  # the envelope, then one chunk


def test_a_json_lines_batch_by_index_and_by_id(tmp_path: Path) -> None:
    articles = make_batch(9)["articles"]
    path = tmp_path / "b_extracted.jsonl"
    path.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in articles))
    assert find_article(path, index=8).article == articles[8]
    found = find_article(path, article_id=articles[5]["id"])
    assert (found.index, found.total) == (5, 9)
    path.write_bytes(path.read_bytes() + b"[1]\n")
    with pytest.raises(sc.InvalidBatchError, match=r"line 10 is an array"):
        find_article(path, article_id="none")


@pytest.mark.parametrize(
    ("article_id", "index"),
    [
        pytest.param("a3", 3, id="first-of-two"),
        pytest.param("70", 7, id="numeric-id"),
        pytest.param("a24", 24, id="last"),
    ],
)
def test_by_id_a_chunk_at_a_time(
    batch: Path, parsed: list[int], monkeypatch: pytest.MonkeyPatch, article_id: str, index: int
) -> None:
    monkeypatch.setattr(lookup, "LOOKUP_CHUNK_ARTICLES", 4)
    found = find_article(batch, article_id=article_id)
    assert found.index == index and found.total == 25
    assert len(parsed) == 1 + index // 4 + 1  # the envelope, then the chunks up to the one that holds it
    assert max(parsed) < batch.stat().st_size / 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"index": 25}, "no article at index 25; the batch has 25 articles (indexes 0 to 24)", id="index"),
        pytest.param({"article_id": "zz"}, "no article has the id 'zz'; check the id, or use --index", id="id"),
    ],
)
def test_what_is_not_there_is_one_line(batch: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(sc.ArticleNotFoundError) as error:
        find_article(batch, **kwargs)
    assert str(error.value) == f"{batch}: {message}"
    assert error.value.exit_code == sc.EXIT_INVALID_INPUT


def test_an_empty_batch_has_no_index(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_bytes(b'{"articles": []}')
    with pytest.raises(sc.ArticleNotFoundError, match=r"the batch has 0 articles \(none\)"):
        find_article(path, index=0)


def test_a_root_key_spelled_with_an_escape_is_found(tmp_path: Path) -> None:
    path = tmp_path / "esc.json"
    path.write_bytes(b'{"\\u0061rticles": [{"id": "x"}, {"id": "y"}]}')  # the key spelled with an escape
    assert find_article(path, article_id="y").index == 1
    assert find_article(path, index=0).article == {"id": "x"}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b'{"articles": [{"id": "x"}, {"id": 1e999}]}', id="bad-article"),
        pytest.param(b'{"articles": [{"id": "x"}], "articles": []}', id="duplicate-key"),
    ],
)
def test_an_invalid_batch_gives_the_message_of_select(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    with pytest.raises(sc.InvalidBatchError) as selected:
        select_file(path, tmp_path / "out.json")
    with pytest.raises(sc.InvalidBatchError) as found:
        find_article(path, article_id="zz")
    assert str(found.value) == str(selected.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(sc.InvalidBatchError, match="no such file"):
        find_article(tmp_path / "nope.json", index=0)
