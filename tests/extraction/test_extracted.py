"""The extracted batch as JSON Lines (``selection_extraction.extracted``): ``extract -o BATCH.jsonl``.

The same real pages (three of tests/data/aeb-pages) are extracted to a JSON batch
and to a JSON Lines batch with the real libraries: the lines are exactly the JSON
batch's articles, and the record beside them is exactly its root. Disk faults are
injected with pytest-mock; nothing else is mocked.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

import selection_core as sc
from selection_core.errors import OutputPathError, WriteError
from selection_extraction import ArticleSpool, ExtractionSettings, extract_to_file, record_path
from selection_extraction.extracted import dump_record
from tests.support import DATA, ROOT

AEB_PAGES = DATA / "aeb-pages"
THREE_PAGES = sorted(p.name for p in AEB_PAGES.glob("*.html.gz"))[:3]
GOLDEN = ROOT / "tests" / "data" / "aeb_batch_extracted.json"


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The three pages extracted to ``news.json`` and to ``news.jsonl``."""
    folder = tmp_path_factory.mktemp("extract") / "news"
    folder.mkdir()
    for name in THREE_PAGES:
        shutil.copy(AEB_PAGES / name, folder / name)
    settings = ExtractionSettings(workers=1)
    as_json = extract_to_file(folder, folder.parent / "news.json", settings)
    as_lines = extract_to_file(folder, folder.parent / "news.jsonl", settings)
    return {"folder": folder, "json": as_json, "jsonl": as_lines}


def test_the_lines_are_the_json_batchs_articles_and_the_record_its_root(both: dict[str, Any]) -> None:
    doc = sc.parse_batch(both["json"].output_path.read_bytes())
    lines_path: Path = both["jsonl"].output_path
    data = lines_path.read_bytes()
    assert sc.parse_lines(data, str(lines_path)) == doc["articles"]
    assert len(doc["articles"]) == 3 and data.count(b"\n") == 3
    record = record_path(lines_path)
    assert record == lines_path.with_name("news.extraction.json")
    assert orjson.loads(record.read_bytes()) == {k: v for k, v in doc.items() if k != "articles"}
    assert record.read_bytes() == dump_record(doc)
    assert sorted(p.name for p in lines_path.parent.iterdir()) == [
        "news",
        "news.extraction.json",
        "news.json",
        "news.jsonl",
    ]


def test_the_fingerprint_is_of_the_lines(both: dict[str, Any]) -> None:
    run = both["jsonl"]
    data = run.output_path.read_bytes()
    assert (run.sha256, run.size_bytes) == (hashlib.sha256(data).hexdigest(), len(data))


def test_the_same_pages_give_the_same_bytes(both: dict[str, Any], tmp_path: Path) -> None:
    again = extract_to_file(both["folder"], tmp_path / "again.jsonl", ExtractionSettings(workers=2))
    assert again.output_path.read_bytes() == both["jsonl"].output_path.read_bytes()
    assert record_path(again.output_path).read_bytes() == record_path(both["jsonl"].output_path).read_bytes()


def spool_batch(doc: dict[str, Any], target: Path) -> tuple[str, int]:
    """Write ``doc`` through an :class:`ArticleSpool`; the fingerprint of the batch."""
    with ArticleSpool(target) as spool:
        for article in doc["articles"]:
            spool.add(article)
        return spool.write({**doc, "articles": []})


@pytest.mark.parametrize("name", ["spooled.jsonl", "spooled.json"])
def test_a_spooled_batch_is_written_as_the_whole_document_is(tmp_path: Path, name: str) -> None:
    doc = sc.parse_batch(GOLDEN.read_bytes())
    written = spool_batch(doc, tmp_path / name)
    data = (tmp_path / name).read_bytes()
    assert data == (sc.render_lines(doc["articles"]) if name.endswith(".jsonl") else sc.dump_batch(doc))
    assert tuple(written) == (hashlib.sha256(data).hexdigest(), len(data))
    if name.endswith(".jsonl"):
        assert (tmp_path / "spooled.extraction.json").read_bytes() == dump_record(doc)


def test_an_empty_batch_is_an_empty_file(tmp_path: Path) -> None:
    with ArticleSpool(tmp_path / "none.jsonl") as spool:
        spool.write({"extraction": {"pages": 0}, "articles": []})
    assert (tmp_path / "none.jsonl").read_bytes() == b""
    assert sc.parse_lines(b"") == []
    assert orjson.loads((tmp_path / "none.extraction.json").read_bytes()) == {"extraction": {"pages": 0}}


def test_no_room_for_the_batch_leaves_neither_file(tmp_path: Path, mocker: Any) -> None:
    doc = sc.parse_batch(GOLDEN.read_bytes())
    real_write = os.write

    def write(fd: int, data: Any) -> int:
        if bytes(data[:2]) == b'{"':  # the lines (the record, staged first, is indented: '{\n')
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    mocker.patch("selection_storage.atomic.os.write", side_effect=write)
    with pytest.raises(WriteError, match="no space left on the device"):
        spool_batch(doc, tmp_path / "b.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_a_refused_record_path_is_refused_before_a_page_is_read(tmp_path: Path) -> None:
    (tmp_path / "b.extraction.json").mkdir()
    with pytest.raises(OutputPathError, match="b.extraction.json: is a directory"):
        extract_to_file(AEB_PAGES / THREE_PAGES[0], tmp_path / "b.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.extraction.json"]
