"""The chunked path of ``select-content``: same answers, same refusals, nothing left behind.

Chunks are read, validated, selected and written where the runner puts them. These
tests hold that path to the core's answers:

* every hostile input of ``tests/data/bad`` that the whole-document parse refuses is
  refused (in one line naming the file) when read chunk by chunk, and every valid one
  gives the core's bytes, at every chunk size, here and with part files;
* through the flow, a refusal is the same one line as ``select``'s, and the folder is
  left exactly as it was (no output, no report, no part file);
* a full disk while a part or the output is written, or a failing chunk, leave no part
  and no output; a transient error while joining is cured by the task's retry;
* the report and the artifacts' rows are those of the whole batch.

Faults are injected with mocks; everything else is real (files, the flow, the
Prefect API of the test harness).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

import selection_core as sc
from content_selection.flows.select_content import select_content
from selection_cli.main import main as select_main
from selection_core.evidence import article_label, close_call_entries, report_entry
from selection_engine.engine import ChunkJob, discard_parts, plan_batch, plan_jobs, select_file, select_job
from tests.support import ROOT
from tests.support.evidence import score_rows
from tests.support.faultkit import load_bad_corpus_script
from tests.support.prefect_fixtures import expected_output, leftover_files


def _report(source: Path) -> bytes:
    doc = sc.parse_batch(source.read_bytes())
    selections = sc.select_articles(doc["articles"])
    return b"".join(orjson.dumps(report_entry(a, s)) + b"\n" for a, s in zip(doc["articles"], selections))


def _with_parts(jobs: Sequence[ChunkJob]) -> Iterator[Any]:
    return map(select_job, jobs)


BAD_DIR = ROOT / "tests" / "data" / "bad"
CASES: list[dict[str, Any]] = json.loads((BAD_DIR / "cases.json").read_text(encoding="utf-8"))["cases"]
GOLDEN = ROOT / "tests" / "data" / "aeb_batch_extracted.json"
#: The cases that are bytes (committed, or generated at test time); the others are about paths.
FILE_CASES = [c for c in CASES if c["kind"] in ("file", "generated")]


corpus = load_bad_corpus_script()


def _write_case(case: dict[str, Any], path: Path) -> Path:
    if case["kind"] == "generated":
        path.write_bytes(corpus.generated_bytes(case["id"]))
    else:
        shutil.copyfile(BAD_DIR / case["file"], path)
    return path


def _chunked_steps(source: Path, output: Path, report: Path | None, chunk_size: int) -> bytes:
    """The engine with part files, as on a parallel runner: the written bytes."""
    select_file(source, output, report, chunk_articles=chunk_size, workers=2, map_jobs=_with_parts)
    return output.read_bytes()


def _whole_refusal(source: Path) -> str | None:
    try:
        sc.parse_batch(source.read_bytes(), str(source))
    except sc.InvalidBatchError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("case", FILE_CASES, ids=[c["id"] for c in FILE_CASES])
@pytest.mark.parametrize("chunk_size", [1, 3])
def test_the_chunked_steps_refuse_exactly_what_the_whole_parse_refuses(
    case: dict[str, Any], chunk_size: int, tmp_path: Path
) -> None:
    source = _write_case(case, tmp_path / "in_extracted.json")
    refusal = _whole_refusal(source)
    output = tmp_path / "out.json"
    if refusal is None:
        assert _chunked_steps(source, output, None, chunk_size) == expected_output(source)
        return
    with pytest.raises(sc.InvalidBatchError) as chunked:
        _chunked_steps(source, output, None, chunk_size)
    assert str(chunked.value).startswith(f"{source}: ") and "\n" not in str(chunked.value)
    assert leftover_files(tmp_path, {source}) == []


def test_the_golden_batch_through_the_chunked_steps(tmp_path: Path) -> None:
    source = tmp_path / "aeb_extracted.json"
    shutil.copyfile(GOLDEN, source)
    report = tmp_path / "report.jsonl"
    assert _chunked_steps(source, tmp_path / "out.json", report, 13) == expected_output(source)
    assert report.read_bytes() == _report(source)
    assert leftover_files(tmp_path, {source, tmp_path / "out.json", report}) == []


def test_rows_built_by_chunks_are_the_rows_of_the_whole(tmp_path: Path) -> None:
    doc = sc.parse_batch(GOLDEN.read_bytes())
    for article in doc["articles"][::3]:  # some articles without an id or url: the column stays, with None
        article.pop("id", None)
        article.pop("url", None)
    source = tmp_path / "b_extracted.json"
    source.write_bytes(sc.dump_batch(doc))
    result = select_file(
        source, tmp_path / "out.json", chunk_articles=4, evidence_rows=10, workers=2, map_jobs=_with_parts
    )
    evidence = result.evidence
    assert evidence is not None
    selections = sc.select_articles(doc["articles"])
    assert evidence.rows == score_rows(doc, selections, 10)
    assert [r["index"] for r in evidence.rows] == list(range(10))
    assert evidence.rows[0]["article"] is None and evidence.rows[1]["article"] == article_label(doc["articles"][1])
    first_calls = close_call_entries(doc["articles"], selections)
    assert evidence.close_calls == first_calls and first_calls  # the golden batch has ties
    assert leftover_files(tmp_path, {source, tmp_path / "out.json"}) == []


def test_a_worker_that_outlives_its_flow_removes_its_own_parts(tmp_path: Path) -> None:
    source = tmp_path / "b_extracted.json"
    shutil.copyfile(GOLDEN, source)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process id that no longer exists: the killed flow
    plan = plan_batch(source, chunk_articles=50)
    report = tmp_path / "r.jsonl"
    orphan = plan_jobs(plan, tmp_path / "out.json", report, parts="0123456789abcdef")
    for job in orphan:
        job.owner_pid = gone.pid
    with pytest.raises(RuntimeError, match="is gone"):
        select_job(orphan[0])
    assert leftover_files(tmp_path, {source}) == []
    live = plan_jobs(plan, tmp_path / "out.json", report, parts="0123456789abcdef")  # this process: kept
    select_job(live[0])
    assert len(leftover_files(tmp_path, {source})) == 2
    discard_parts(live)
    assert leftover_files(tmp_path, {source}) == []


# --- through the flow -------------------------------------------------------------

BAD_SAMPLE = [
    "duplicate_article_key",
    "big_int_in_block",
    "invalid_utf8_continuation",
    "trailing_garbage",
    "article_string",
    "utf8_bom",
    "deep_duplicate_key_1000",
]


def _case(case_id: str) -> dict[str, Any]:
    return next(c for c in FILE_CASES if c["id"] == case_id)


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
@pytest.mark.parametrize("case_id", BAD_SAMPLE)
def test_a_refusal_is_the_same_line_as_select_and_nothing_is_written(case_id: str, tmp_path: Path, capsys) -> None:
    source = _write_case(_case(case_id), tmp_path / "in_extracted.json")
    before = source.read_bytes()
    assert select_main(["select", str(source)]) == sc.EXIT_INVALID_INPUT
    select_line = capsys.readouterr().err.strip().split("error: ", 1)[1]
    status = select_main(["run", str(source), "--chunk-size", "1", "--report", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err.strip()
    assert status == sc.EXIT_INVALID_INPUT
    assert err.count("\n") == 0 and err.split("error: ", 1)[1] == select_line
    assert source.read_bytes() == before
    assert leftover_files(tmp_path, {source}) == []


def test_sample_cases_exist() -> None:
    ids = {c["id"] for c in FILE_CASES}
    assert set(BAD_SAMPLE) <= ids, sorted(set(BAD_SAMPLE) - ids)


def _fail_writes(mocker, first: int, last: int | None = None, err: int = errno.ENOSPC) -> Any:
    """Make the ``first``-th to ``last``-th ``os.write`` of the core's file shell fail (all from
    ``first`` on when ``last`` is None: a disk that stays full)."""
    real_write = os.write
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] >= first and (last is None or calls["n"] <= last):
            raise OSError(err, os.strerror(err))
        return real_write(fd, data)

    return mocker.patch("selection_storage.atomic.os.write", side_effect=write)


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
@pytest.mark.parametrize("nth_write", [1, 4, 9], ids=["first-part", "a-later-part", "while-assembling"])
def test_a_full_disk_anywhere_leaves_no_part_and_no_output(nth_write: int, tmp_path: Path, mocker) -> None:
    source = tmp_path / "in_extracted.json"
    shutil.copyfile(GOLDEN, source)
    _fail_writes(mocker, nth_write)
    state = select_content(
        input_path=str(source),
        report_path=str(tmp_path / "r.jsonl"),
        chunk_size=60,
        task_runner="in-process",
        return_state=True,
    )
    assert state.is_failed() and "no space left" in state.message
    assert leftover_files(tmp_path, {source}) == []


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_a_transient_error_while_joining_is_cured_by_the_tasks_retry(tmp_path: Path, mocker) -> None:
    source = tmp_path / "in_extracted.json"
    shutil.copyfile(GOLDEN, source)
    report = tmp_path / "r.jsonl"
    real_write = os.write
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 3:  # once, while the chunks are joined
            raise OSError(errno.EIO, "Input/output error")
        return real_write(fd, data)

    mocker.patch("selection_storage.atomic.os.write", side_effect=write)
    result = select_content(input_path=str(source), report_path=str(report), chunk_size=40, task_runner="in-process")
    assert calls["n"] > 3
    assert Path(result.output_path).read_bytes() == expected_output(source)
    assert report.read_bytes() == _report(source)
    assert leftover_files(tmp_path, {source, Path(result.output_path), report}) == []


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_a_failing_chunk_leaves_no_part_and_no_output(tmp_path: Path, mocker) -> None:
    source = tmp_path / "in_extracted.json"
    shutil.copyfile(GOLDEN, source)
    real = sc.select_article

    def select_article(article: dict[str, Any], index: int) -> sc.Selection:
        if index == 100:
            raise RuntimeError("injected bug")
        return real(article, index)

    mocker.patch("selection_core.chunks.select_article", side_effect=select_article)
    state = select_content(input_path=str(source), chunk_size=30, task_runner="in-process", return_state=True)
    assert state.is_failed() and "injected bug" in state.message
    assert leftover_files(tmp_path, {source}) == []


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_a_chunked_run_with_a_report_writes_what_the_default_run_writes(tmp_path: Path) -> None:
    source = tmp_path / "in_extracted.json"
    shutil.copyfile(GOLDEN, source)
    outputs = {}
    for label, options in (("whole", {}), ("chunked", {"chunk_size": 17, "task_runner": "in-process"})):
        result = select_content(
            input_path=str(source),
            output_path=str(tmp_path / f"{label}.json"),
            report_path=str(tmp_path / f"{label}.jsonl"),
            **options,
        )
        outputs[label] = (
            (tmp_path / f"{label}.json").read_bytes(),
            (tmp_path / f"{label}.jsonl").read_bytes(),
            result.model_dump(exclude={"output_path", "report_path", "read_as"}),
        )
        chunks = -(-181 // options.get("chunk_size", 500))
        assert (
            result.read_as == f"in {chunks} chunk{'s' * (chunks > 1)} of articles, one after the other in this process"
        )
    assert outputs["whole"] == outputs["chunked"]
    assert orjson.loads(outputs["chunked"][0]) == orjson.loads(expected_output(source))
