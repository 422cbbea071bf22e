"""A batch file selected one run at a time (selection_storage.chunked_file): the one-piece run's bytes and refusals."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import selection_core as sc
from selection_storage import select_file, select_file_in_one_piece
from selection_storage.files import InputChangedError, sha256_file
from tests.support import DATA

AEB = DATA / "aeb_batch_extracted.json"
BAD = DATA / "bad"


@pytest.mark.parametrize("run_articles", [1, 17, 180, 181, 1000, None])
def test_the_output_and_report_are_those_of_the_one_piece_run(tmp_path: Path, run_articles: int | None) -> None:
    whole = select_file_in_one_piece(AEB, tmp_path / "whole.json", tmp_path / "whole.jsonl")
    chunked = select_file(AEB, tmp_path / "chunked.json", tmp_path / "chunked.jsonl", run_articles=run_articles)
    assert (tmp_path / "chunked.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    assert (tmp_path / "chunked.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert chunked.summary == whole.summary and chunked.runs == -(-181 // (run_articles or 500))
    assert not chunked.one_piece
    assert chunked.written.sha256 == sha256_file(tmp_path / "chunked.json")
    assert chunked.input_sha256 == sha256_file(AEB)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunked.json", "chunked.jsonl", "whole.json", "whole.jsonl"]


def test_progress_advances_chunk_by_chunk(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    select_file(AEB, tmp_path / "out.json", run_articles=100, progress=lambda d, t: seen.append((d, t)))
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
        select_file_in_one_piece(source, tmp_path / "whole.json")
    except sc.InvalidBatchError as exc:
        expected: str | None = str(exc)
    else:
        expected = None
    if expected is None:
        chunked = select_file(source, tmp_path / "chunked.json", run_articles=1)
        assert (tmp_path / "chunked.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
        assert chunked.summary.articles == sc.summarize([]).articles
        return
    with pytest.raises(sc.InvalidBatchError) as caught:
        select_file(source, tmp_path / "chunked.json", run_articles=1)
    assert str(caught.value) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_runs_are_bounded_in_bytes_not_only_in_articles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import selection_storage.chunks as chunks

    monkeypatch.setattr(chunks, "RUN_BYTES", 200_000)  # about 14 of these articles
    whole = select_file_in_one_piece(AEB, tmp_path / "whole.json")
    chunked = select_file(AEB, tmp_path / "chunked.json")
    assert (tmp_path / "chunked.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    assert chunked.summary == whole.summary
    assert chunked.runs > 181 * 14_400 // 200_000  # not one run of 500 articles


def test_a_batch_the_scan_gives_up_on_is_selected_in_one_piece_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every valid batch can be delimited, so the scan's giving up is injected (a fault).
    import selection_storage.scan as scan

    def give_up(*_args: object) -> None:
        raise scan._GiveUp

    whole = select_file_in_one_piece(AEB, tmp_path / "whole.json", tmp_path / "whole.jsonl")
    monkeypatch.setattr(scan, "_scan", give_up)
    result = select_file(AEB, tmp_path / "out.json", tmp_path / "out.jsonl")
    assert result.one_piece and result.runs == 1
    assert (tmp_path / "out.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert result.summary == whole.summary and result.input_sha256 == sha256_file(AEB)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"url": "', b'"url": tru, "x": "'),  # a syntax error
        (b'"id": "', b'"id": 123456789012345678901234567890, "x": "'),  # an integer beyond 64 bits
    ],
    ids=["syntax", "big-int"],
)
def test_a_bad_article_deep_in_the_batch_is_refused_in_the_whole_batch_s_words_without_reading_it_whole(
    tmp_path: Path, mocker: Any, old: bytes, new: bytes
) -> None:
    data = AEB.read_bytes()
    at = data.index(old, len(data) * 9 // 10)  # an article near the end
    source = tmp_path / "b_extracted.json"
    source.write_bytes(data[:at] + new + data[at + len(old) :])
    with pytest.raises(sc.InvalidBatchError) as whole:
        select_file_in_one_piece(source, tmp_path / "whole.json")
    import selection_storage.chunks
    import selection_storage.files

    for module in (selection_storage.chunks, selection_storage.files, selection_storage.whole_file):
        mocker.patch.object(module, "read_input", side_effect=AssertionError("the whole batch was read"))
    with pytest.raises(sc.InvalidBatchError) as streamed:
        select_file(source, tmp_path / "out.json", tmp_path / "r.jsonl", run_articles=10)
    assert str(streamed.value) == str(whole.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b_extracted.json"]


def test_an_input_rewritten_while_a_run_is_read_is_refused_and_nothing_is_written(tmp_path: Path, mocker: Any) -> None:
    source = tmp_path / "b_extracted.json"
    shutil.copyfile(AEB, source)
    real = os.preadv
    reads = {"n": 0}

    def preadv_then_rewrite(fd: int, buffers: Any, offset: int) -> int:  # a writer rewrites the file in place
        got = real(fd, buffers, offset)
        reads["n"] += 1
        if reads["n"] == 3:  # the last run's read
            with open(source, "r+b") as fh:
                fh.seek(len(AEB.read_bytes()) - 200)
                fh.write(b" ")
            os.utime(source, ns=(1, 1))  # a new modification time, as any write gives
        return got

    mocker.patch("selection_storage.files.os.preadv", side_effect=preadv_then_rewrite)
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        select_file(source, tmp_path / "out.json", run_articles=70)  # 3 runs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b_extracted.json"]
