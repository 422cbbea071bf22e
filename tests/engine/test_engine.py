"""The selection engine of a batch file (``selection_engine.engine``): the core's bytes, chunk by chunk, anywhere.

The reference is the core on the whole document in memory (``select_batch_bytes``):
the engine must write its bytes and report whatever the chunking and wherever the
chunks are selected, refuse a bad batch in one line naming the place, write nothing
when it refuses, and leave no staged file or part behind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

import selection_core as sc
from selection_core.evidence import report_entry
from selection_engine import engine, plan_batch, plan_jobs, select_file, select_job
from selection_engine.engine import ChunkJob, chunk_limits, discard_parts
from selection_storage.files import InputChangedError
from tests.support import DATA, sha256_file
from tests.support.evidence import batch_evidence
from tests.support.prefect_fixtures import leftover_files

AEB = DATA / "aeb_batch_extracted.json"


def reference(path: Path) -> tuple[bytes, bytes, list[sc.Selection]]:
    """The selected bytes and the report of the core on the whole document."""
    data = path.read_bytes()
    output, selections = sc.select_batch_bytes(data, str(path))
    doc = sc.parse_batch(data)
    report = b"".join(orjson.dumps(report_entry(a, s)) + b"\n" for a, s in zip(doc["articles"], selections))
    return output, report, selections


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in_extracted.json"
    shutil.copyfile(AEB, path)
    return path


def _elsewhere(jobs: Sequence[ChunkJob]) -> Iterator[sc.Selection]:
    """Chunks selected on two threads, as a parallel runner would (each writing its parts)."""
    with ThreadPoolExecutor(2) as pool:
        yield from pool.map(select_job, jobs)


@pytest.mark.parametrize("chunk_articles", [1, 17, 180, 181, 1000, None])
@pytest.mark.parametrize("where", ["here", "elsewhere"])
def test_the_output_and_report_are_the_cores_whatever_the_chunks(
    source: Path, tmp_path: Path, chunk_articles: int | None, where: str
) -> None:
    output, report, selections = reference(source)
    mapped = _elsewhere if where == "elsewhere" else None
    workers = 2 if mapped else 1
    result = select_file(
        source,
        tmp_path / "o.json",
        tmp_path / "r.jsonl",
        chunk_articles=chunk_articles,
        evidence_rows=7,
        workers=workers,
        map_jobs=mapped,
    )
    assert (tmp_path / "o.json").read_bytes() == output and (tmp_path / "r.jsonl").read_bytes() == report
    assert result.summary == sc.summarize(selections)
    assert result.chunks == (-(-181 // chunk_articles) if chunk_articles else 1)
    assert result.output_sha256 == sha256_file(tmp_path / "o.json")
    assert result.output_size == len(output)
    assert (result.input_sha256, result.input_size) == (sha256_file(source), source.stat().st_size)
    doc = sc.parse_batch(source.read_bytes())
    expected = batch_evidence(doc, selections, 7)
    assert result.evidence is not None
    assert (result.evidence.rows, result.evidence.close_calls) == (expected.rows, expected.close_calls)
    assert leftover_files(tmp_path, {source, tmp_path / "o.json", tmp_path / "r.jsonl"}) == []


def test_progress_advances_chunk_by_chunk(source: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    select_file(source, tmp_path / "out.json", chunk_articles=100, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(100, 181), (181, 181)]


def test_chunks_are_bounded_in_bytes_not_only_in_articles(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "CHUNK_BYTES", 200_000)  # about 14 of these articles
    result = select_file(source, tmp_path / "out.json")
    assert (tmp_path / "out.json").read_bytes() == reference(source)[0]
    assert result.chunks > 181 * 14_400 // 200_000  # not one chunk of 500 articles


def test_chunk_limits_follow_the_workers_and_the_file_size() -> None:
    assert chunk_limits(10**6, 1) == (engine.CHUNK_BYTES, engine.CHUNK_ARTICLES)
    assert chunk_limits(10**6, 2) == (engine.CHUNK_BYTES, engine.MAX_CHUNK_ARTICLES)  # never below a chunk here
    assert chunk_limits(200 << 20, 2) == (25 << 20, engine.MAX_CHUNK_ARTICLES)  # about 4 chunks per worker
    assert chunk_limits(10**10, 8, 30) == (engine.MAX_CHUNK_BYTES, 30)
    with pytest.raises(ValueError, match="at least 1"):
        chunk_limits(10, 1, 0)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (b'"url": "', b'"url": tru, "x": "', r"\$\.articles\[1\d\d\] is not valid JSON at byte offset \d+: "),
        (
            b'"id": "',
            b'"id": 123456789012345678901234567890, "x": "',
            r"\$\.articles\[1\d\d\]\.id is an integer beyond",
        ),
    ],
    ids=["syntax", "big-int"],
)
def test_a_bad_article_deep_in_the_batch_is_refused_with_its_place_and_nothing_is_written(
    tmp_path: Path, old: bytes, new: bytes, message: str
) -> None:
    data = AEB.read_bytes()
    at = data.index(old, len(data) * 9 // 10)  # an article near the end
    source = tmp_path / "b_extracted.json"
    source.write_bytes(data[:at] + new + data[at + len(old) :])
    with pytest.raises(sc.InvalidBatchError, match=f"^{source}: " + message):
        select_file(source, tmp_path / "out.json", tmp_path / "r.jsonl", chunk_articles=10)
    assert leftover_files(tmp_path, {source}) == []


def test_an_article_refusal_names_the_byte_offset_in_the_file(tmp_path: Path) -> None:
    data = AEB.read_bytes()
    at = data.index(b'"url": "', len(data) // 2)
    source = tmp_path / "b_extracted.json"
    source.write_bytes(data[:at] + b'"url": nope, "x": "' + data[at + 8 :])
    with pytest.raises(sc.InvalidBatchError) as info:
        select_file(source, tmp_path / "out.json", chunk_articles=3)
    offset = int(str(info.value).split("byte offset ")[1].split(":")[0])
    assert offset == at + len(b'"url": ')


@pytest.mark.parametrize("raw", [b"", b"[]", b"{not json", b'{"articles": {}}', b'{"articles": [], "articles": []}'])
def test_the_plan_refuses_what_is_not_a_batch_in_one_line(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "bad_extracted.json"
    path.write_bytes(raw)
    with pytest.raises(sc.InvalidBatchError) as info:
        plan_batch(path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)


def test_an_invalid_envelope_is_refused_with_the_files_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "bad_extracted.json"
    data = b'{"articles": [{"a": 1}, {"b": 2}], "meta": {"k": 1, "k": 2}, "x": tru}'
    path.write_bytes(data)
    with pytest.raises(sc.InvalidBatchError, match=r"not valid JSON at byte offset (\d+)") as info:
        plan_batch(path)
    offset = int(str(info.value).split("byte offset ")[1].split(":")[0])
    assert data[offset:].startswith(b"tru}")


def test_a_batch_refused_by_its_envelope_after_the_articles_selects_nothing(source: Path, tmp_path: Path) -> None:
    mapped: list[ChunkJob] = []

    def map_jobs(jobs: Sequence[ChunkJob]) -> Iterator[Any]:
        mapped.extend(jobs)
        return map(select_job, jobs)

    bad = tmp_path / "bad_extracted.json"
    bad.write_bytes(source.read_bytes().rstrip()[:-1] + b', "run": }')  # the envelope breaks after the articles
    with pytest.raises(sc.InvalidBatchError, match="bad_extracted.json"):
        select_file(bad, tmp_path / "o.json", chunk_articles=20, workers=2, map_jobs=map_jobs)
    assert mapped == [] and leftover_files(tmp_path, {source, bad}) == []


def test_a_chunk_of_a_file_changed_since_the_plan_is_refused(source: Path, tmp_path: Path) -> None:
    plan = plan_batch(source, chunk_articles=50)
    jobs = plan_jobs(plan, tmp_path / "out.json", None, parts="0123456789abcdef")
    source.write_bytes(source.read_bytes() + b" ")
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        select_job(jobs[0])
    assert leftover_files(tmp_path, {source}) == []


def test_discard_parts_removes_what_exists_and_never_raises(source: Path, tmp_path: Path) -> None:
    plan = plan_batch(source, chunk_articles=30)
    jobs = plan_jobs(plan, tmp_path / "out.json", tmp_path / "out.jsonl", parts="0123456789abcdef")
    for job in jobs[:2]:
        select_job(job)
    assert len(leftover_files(tmp_path, {source})) == 4
    discard_parts(jobs)
    discard_parts(jobs)  # nothing left: still no error
    assert leftover_files(tmp_path, {source}) == []


def test_a_failing_chunk_elsewhere_leaves_no_part_and_no_output(source: Path, tmp_path: Path) -> None:
    def fail_third(jobs: Sequence[ChunkJob]) -> Iterator[Any]:
        for number, job in enumerate(jobs):
            if number == 2:
                raise OSError(5, "Input/output error")
            yield select_job(job)

    with pytest.raises(OSError):
        select_file(
            source, tmp_path / "o.json", tmp_path / "r.jsonl", chunk_articles=20, workers=2, map_jobs=fail_third
        )
    assert leftover_files(tmp_path, {source}) == []


def test_an_input_rewritten_while_a_chunk_is_read_is_refused_and_nothing_is_written(
    source: Path, tmp_path: Path, mocker: Any
) -> None:
    real = os.preadv
    reads = {"n": 0}

    def preadv_then_rewrite(fd: int, buffers: Any, offset: int) -> int:  # a writer rewrites the file in place
        got = real(fd, buffers, offset)
        reads["n"] += 1
        if reads["n"] == 3:  # the last chunk's read
            with open(source, "r+b") as fh:
                fh.seek(source.stat().st_size - 200)
                fh.write(b" ")
            os.utime(source, ns=(1, 1))  # a new modification time, as any write gives
        return got

    mocker.patch("selection_storage.files.os.preadv", side_effect=preadv_then_rewrite)
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        select_file(source, tmp_path / "out.json", chunk_articles=70)  # 3 chunks
    assert leftover_files(tmp_path, {source}) == []


def test_a_file_that_grows_while_it_is_planned_is_noticed(source: Path, mocker: Any) -> None:
    real_scan = engine.scan

    def scan_then_append(read: Any, *args: Any, **kwargs: Any) -> Any:
        appended = []

        def read_then_append(n: int) -> bytes:  # a writer appends once, during the read
            block = read(n)
            if not appended:
                appended.append(True)
                with open(source, "ab") as fh:
                    fh.write(b"\n")
            return block

        return real_scan(read_then_append, *args, **kwargs)

    mocker.patch.object(engine, "scan", side_effect=scan_then_append)
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        plan_batch(source)
