"""``select_file(..., output_format="dataset")``: the selected text as Parquet, read back as users read it.

Real batches (the 181 pages of tests/data), real pyarrow, DuckDB and Hugging Face ``datasets``; the only mock
hides pyarrow, as a base install lacks it.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

import selection_core as sc
from selection_cli.main import main
from selection_core.config import TEXT_FIELDS
from selection_core.dataset import COLUMN_NAMES, DATASET
from selection_core.errors import EXIT_UNAVAILABLE, InvalidBatchError, MissingExtraError
from selection_engine import dataset as dataset_module
from selection_engine.engine import ChunkJob, select_file, select_job
from tests.support import DATA
from tests.support.prefect_fixtures import leftover_files

pq = pytest.importorskip("pyarrow.parquet")

GOLDEN = DATA / "aeb_batch_extracted.json"


def _with_parts(jobs: Sequence[ChunkJob]) -> Iterator[Any]:
    return map(select_job, jobs)  # each chunk writes its part file, as on a parallel runner


def _selected_articles(tmp_path: Path) -> list[dict[str, Any]]:
    """The articles of the selected batch: what the dataset must agree with."""
    select_file(GOLDEN, tmp_path / "reference_selected.json")
    return sc.parse_batch((tmp_path / "reference_selected.json").read_bytes())["articles"]


def test_the_dataset_is_written_beside_the_input_with_its_selected_text(tmp_path: Path) -> None:
    source = tmp_path / "aeb_extracted.json"
    source.write_bytes(GOLDEN.read_bytes())
    result = select_file(source, output_format="dataset")
    assert result.output_path == tmp_path / "aeb_extracted_selected.parquet"
    written = result.output_path.read_bytes()
    assert result.output_sha256 == hashlib.sha256(written).hexdigest() and result.output_size == len(written)

    table = pq.read_table(result.output_path)
    assert table.column_names == list(COLUMN_NAMES)
    rows = table.to_pylist()
    articles = _selected_articles(tmp_path)
    assert len(rows) == len(articles) == result.summary.articles == 181
    for row, article in zip(rows, articles, strict=True):
        chosen = article[sc.SELECTED_KEY]
        assert row["selected_extractor"] == chosen
        assert row["text"] == article[chosen][TEXT_FIELDS[chosen]]
        assert (row["id"], row["url"]) == (article["id"], article["url"])
    assert sum(r["reason"] == "consensus_top_score" for r in rows) == result.summary.by_reason["consensus_top_score"]
    assert all(0 < r["score"] <= 1 for r in rows if r["reason"].startswith("consensus"))


def test_the_same_bytes_at_every_chunk_size_with_part_files_and_from_json_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset_module, "ROW_GROUP_ROWS", 16)  # row groups that cut across every chunking below
    reference = select_file(GOLDEN, tmp_path / "whole.parquet", output_format="dataset").output_path.read_bytes()
    for chunk_articles in (1, 7, 50):
        out = tmp_path / f"c{chunk_articles}.parquet"
        select_file(GOLDEN, out, chunk_articles=chunk_articles, output_format="dataset")
        assert out.read_bytes() == reference, chunk_articles
        parts = tmp_path / f"p{chunk_articles}.parquet"
        select_file(
            GOLDEN, parts, chunk_articles=chunk_articles, workers=2, map_jobs=_with_parts, output_format="dataset"
        )
        assert parts.read_bytes() == reference, chunk_articles
    lines = tmp_path / "aeb_extracted.jsonl"
    lines.write_bytes(sc.render_lines(sc.parse_batch(GOLDEN.read_bytes())["articles"]))
    assert select_file(lines, output_format="dataset").output_path.read_bytes() == reference

    metadata = pq.ParquetFile(tmp_path / "whole.parquet").metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sizes == [16] * 11 + [5]
    assert metadata.row_group(0).column(0).compression == "ZSTD"
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".parquet") == ["aeb_extracted.jsonl"]


def test_row_groups_are_written_while_the_chunks_are_selected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_module, "ROW_GROUP_ROWS", 10)
    staged_sizes: list[int] = []

    def watch(done: int, total: int) -> None:
        staged = [p for p in tmp_path.iterdir() if p.name != "reference_selected.json"]
        staged_sizes.append(sum(p.stat().st_size for p in staged))

    select_file(GOLDEN, tmp_path / "out.parquet", chunk_articles=30, progress=watch, output_format="dataset")
    assert len(staged_sizes) == 7 and 0 < staged_sizes[0] < staged_sizes[3] < staged_sizes[5]  # grows chunk by chunk


def test_duckdb_and_datasets_read_the_dataset_as_users_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb = pytest.importorskip("duckdb")
    folder = tmp_path / "crawl"
    for name, chunk in (("a", 7), ("b", 50)):
        (folder / name).mkdir(parents=True)
        select_file(GOLDEN, folder / name / "part.parquet", chunk_articles=chunk, output_format="dataset")
    texts = [r["text"] for r in pq.read_table(folder / "a" / "part.parquet").to_pylist()]

    glob = str(folder / "**" / "*.parquet")
    count, characters = duckdb.sql(f"SELECT count(*), sum(length(text)) FROM read_parquet('{glob}')").fetchall()[0]
    assert (count, characters) == (2 * 181, 2 * sum(len(t) for t in texts))

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset(
        "parquet", data_files=str(folder / "a" / "part.parquet"), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.column_names == list(COLUMN_NAMES) and loaded["text"] == texts


def test_an_invalid_article_leaves_no_dataset_and_no_temporary_file(tmp_path: Path) -> None:
    doc = orjson.loads(GOLDEN.read_bytes())
    doc["articles"][150] = "not an article"
    source = tmp_path / "bad_extracted.json"
    source.write_bytes(orjson.dumps(doc))
    with pytest.raises(InvalidBatchError, match=r"articles\[150\]"):
        select_file(source, chunk_articles=20, output_format="dataset")
    assert leftover_files(tmp_path, {source}) == []


def test_without_pyarrow_a_dataset_names_the_extra_and_writes_nothing(
    tmp_path: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "aeb_extracted.json"
    source.write_bytes(GOLDEN.read_bytes())
    mocker.patch.dict(sys.modules, {"pyarrow": None, "pyarrow.parquet": None})  # as in a base install
    with pytest.raises(MissingExtraError, match=r"pip install 'content-selection\[dataset\]'"):
        select_file(source, output_format="dataset")
    assert main(["select", str(source), "--format", "dataset"]) == EXIT_UNAVAILABLE == 69
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the 'dataset' extra" in err and "pyarrow" in err
    assert leftover_files(tmp_path, {source}) == []
    assert main(["select", str(source)]) == 0  # the selected batch needs no pyarrow


def test_the_command_writes_the_same_bytes_under_any_hash_seed_and_locale(tmp_path: Path) -> None:
    import os
    import subprocess

    outputs = []
    for seed, locale in (("1", "C.UTF-8"), ("4242", "POSIX")):
        out = tmp_path / f"{seed}.parquet"
        env = {**os.environ, "PYTHONHASHSEED": seed, "LC_ALL": locale}
        command = [sys.executable, "-m", "selection_cli.main", "select", str(GOLDEN), "-o", str(out), "--format"]
        subprocess.run([*command, "dataset"], env=env, check=True, capture_output=True)
        outputs.append(out.read_bytes())
    assert (
        outputs[0]
        == outputs[1]
        == select_file(GOLDEN, tmp_path / "here.parquet", output_format="dataset").output_path.read_bytes()
    )


def test_a_row_group_is_cut_early_when_its_text_is_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [
        r["text"]
        for r in pq.read_table(
            select_file(GOLDEN, tmp_path / "a.parquet", output_format=DATASET).output_path
        ).to_pylist()
    ]
    limit = 20_000
    monkeypatch.setattr(dataset_module, "ROW_GROUP_TEXT_CHARS", limit)
    metadata = pq.ParquetFile(select_file(GOLDEN, tmp_path / "b.parquet", output_format=DATASET).output_path).metadata
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    expected, rows, chars = [], 0, 0
    for text in texts:  # the rule, replayed: a group ends at the row that brings its text to the limit
        rows, chars = rows + 1, chars + len(text)
        if chars >= limit:
            expected, rows, chars = [*expected, rows], 0, 0
    assert sizes == expected + ([rows] if rows else []) and len(sizes) > 10
