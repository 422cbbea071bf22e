"""A batch file selected in chunks in one process (selection_storage.chunked_file): select_file's bytes and refusals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import selection_core as sc
from selection_storage import select_file, select_file_in_chunks
from tests.support import DATA

AEB = DATA / "aeb_batch_extracted.json"
BAD = DATA / "bad"


@pytest.mark.parametrize("chunk_articles", [1, 17, 180, 181, 1000])
def test_the_output_and_report_are_those_of_the_one_piece_run(tmp_path: Path, chunk_articles: int) -> None:
    whole = select_file(AEB, tmp_path / "whole.json", tmp_path / "whole.jsonl")
    chunked = select_file_in_chunks(AEB, tmp_path / "chunked.json", tmp_path / "chunked.jsonl", chunk_articles)
    assert (tmp_path / "chunked.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    assert (tmp_path / "chunked.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert chunked.summary == whole.summary and chunked.chunks == -(-181 // chunk_articles)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunked.json", "chunked.jsonl", "whole.json", "whole.jsonl"]


def test_progress_advances_chunk_by_chunk(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    select_file_in_chunks(AEB, tmp_path / "out.json", chunk_articles=100, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(100, 181), (181, 181)]


@pytest.mark.parametrize(
    "name",
    [
        "truncated_in_string.json",
        "duplicate_block_key.json",
        "big_int_in_block.json",
        "valid_empty_articles_with_metadata.json",
    ],
)
def test_a_bad_batch_is_refused_in_the_words_of_the_one_piece_run(tmp_path: Path, name: str) -> None:
    source = tmp_path / name
    shutil.copyfile(BAD / name, source)
    try:
        select_file(source, tmp_path / "whole.json")
    except sc.InvalidBatchError as exc:
        expected: str | None = str(exc)
    else:
        expected = None
    if expected is None:
        chunked = select_file_in_chunks(source, tmp_path / "chunked.json", chunk_articles=1)
        assert (tmp_path / "chunked.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
        assert chunked.summary.articles == sc.summarize([]).articles
        return
    with pytest.raises(sc.InvalidBatchError) as caught:
        select_file_in_chunks(source, tmp_path / "chunked.json", chunk_articles=1)
    assert str(caught.value) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
