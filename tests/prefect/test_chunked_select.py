"""The chunked path of ``select-content``: same answers, same refusals, nothing left behind.

Workers read, validate, score and write their own chunk of the batch. These
tests hold that path to the promises of the one-piece path:

* every hostile input of ``tests/data/bad`` that the whole-document parse
  refuses is refused by the chunked steps too (and every valid one gives the
  same bytes), at every chunk size;
* through the flow, a refusal is the same one line as ``select``'s, and the
  folder is left exactly as it was (no output, no report, no part file);
* a file changed during the run, a full disk while a part or the output is
  written, or a failing worker leave no part and no output;
* the report and the artifacts' rows are those of the one-piece path.

Faults are injected with mocks; everything else is real (files, the flow, the
Prefect API of the test harness).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import selection_core as sc
from flows.select_content import select_content
from selection_cli.main import main as select_main
from selection_cli.run import run_main
from selection_core.evidence import article_label, close_call_entries, merge_evidence, score_rows
from selection_storage import parts
from selection_storage.chunks import plan_jobs, refuse_as_whole
from selection_storage.files import InputChangedError
from selection_storage.parts import discard_parts
from selection_storage.report import report_lines
from tasks import chunks
from tests.support import ROOT
from tests.support.faultkit import load_bad_corpus_script
from tests.support.prefect_fixtures import expected_output, leftover_files

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
    """The chunked path's steps in order, in this process (their ``.fn``): the written bytes."""
    plan = chunks.plan_batch.fn(source, 1)
    assert plan.layout is not None
    jobs = plan_jobs(plan, chunk_size, output, report, table_rows=5)
    try:
        outcomes = [chunks.select_chunk.fn(job) for job in jobs]
    except sc.InvalidBatchError:
        refuse_as_whole(plan)  # as the flow does: the whole batch's refusal
        raise
    chunks.assemble_batch.fn(plan.envelope, outcomes, output, report, plan.format)
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
    assert str(chunked.value) == refusal


def test_the_golden_batch_through_the_chunked_steps(tmp_path: Path) -> None:
    source = tmp_path / "aeb_extracted.json"
    shutil.copyfile(GOLDEN, source)
    report = tmp_path / "report.jsonl"
    assert _chunked_steps(source, tmp_path / "out.json", report, 13) == expected_output(source)
    doc = sc.parse_batch(source.read_bytes())
    selections = sc.select_articles(doc["articles"])
    assert report.read_bytes() == b"".join(report_lines(doc["articles"], selections))
    assert leftover_files(tmp_path, {source, tmp_path / "out.json", report}) == []


def test_rows_built_by_chunks_are_the_rows_of_the_whole(tmp_path: Path) -> None:
    doc = sc.parse_batch(GOLDEN.read_bytes())
    for article in doc["articles"][::3]:  # some articles without an id or url: the column stays, with None
        article.pop("id", None)
        article.pop("url", None)
    source = tmp_path / "b_extracted.json"
    source.write_bytes(sc.dump_batch(doc))
    plan = chunks.plan_batch.fn(source, 1)
    jobs = plan_jobs(plan, 4, tmp_path / "out.json", None, table_rows=10)
    outcomes = [chunks.select_chunk.fn(job) for job in jobs[:3]]
    discard_parts(jobs)
    evidence = merge_evidence(((o.rows, o.close_calls) for o in outcomes), 10)
    selections = sc.select_articles(doc["articles"])
    assert evidence.rows == score_rows(doc, selections, 10)
    assert [r["index"] for r in evidence.rows] == list(range(10))
    assert evidence.rows[0]["article"] is None and evidence.rows[1]["article"] == article_label(doc["articles"][1])
    first_calls = close_call_entries(doc["articles"][:12], selections[:12])
    assert evidence.close_calls == first_calls and first_calls  # the golden batch has ties in its first 12
    assert leftover_files(tmp_path, {source}) == []


def test_a_file_changed_after_the_plan_is_noticed_by_the_chunk(tmp_path: Path) -> None:
    source = tmp_path / "b_extracted.json"
    shutil.copyfile(GOLDEN, source)
    plan = chunks.plan_batch.fn(source, 1)
    jobs = plan_jobs(plan, 50, tmp_path / "out.json", None, table_rows=0)
    replacement = tmp_path / "new.json"
    replacement.write_bytes(source.read_bytes().replace(b'"articles"', b'"articles" ', 1))
    os.replace(replacement, source)  # an upstream writer replaces the file atomically
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        chunks.select_chunk.fn(jobs[0])
    assert leftover_files(tmp_path, {source}) == []


def test_a_worker_that_outlives_its_flow_removes_its_own_parts(tmp_path: Path) -> None:
    source = tmp_path / "b_extracted.json"
    shutil.copyfile(GOLDEN, source)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process id that no longer exists: the killed flow
    plan = chunks.plan_batch.fn(source, 1)
    report = tmp_path / "r.jsonl"
    orphan = plan_jobs(plan, 50, tmp_path / "out.json", report, 0, owner_pid=gone.pid)
    with pytest.raises(RuntimeError, match="is gone"):
        chunks.select_chunk.fn(orphan[0])
    assert leftover_files(tmp_path, {source}) == []
    live = plan_jobs(plan, 50, tmp_path / "out.json", report, 0)  # this process: kept
    chunks.select_chunk.fn(live[0])
    assert len(leftover_files(tmp_path, {source})) == 2
    discard_parts(live)
    assert leftover_files(tmp_path, {source}) == []


def test_an_input_that_cannot_be_delimited_is_scored_in_one_piece(tmp_path: Path, mocker) -> None:
    source = tmp_path / "b_extracted.json"
    shutil.copyfile(GOLDEN, source)
    from selection_storage import scan

    mocker.patch.object(scan, "_scan", side_effect=scan._GiveUp)  # fault: the scan gives up
    plan = chunks.plan_batch.fn(source, 1)
    assert plan.layout is None and plan.doc == sc.parse_batch(GOLDEN.read_bytes())
    assert plan.sha256 == hashlib.sha256(GOLDEN.read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="one piece"):
        plan_jobs(plan, 10, tmp_path / "out.json", None, 0)


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
    status = run_main([str(source), "--chunk-size", "1", "--report", str(tmp_path / "r.jsonl")])
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
def test_a_write_error_while_joining_is_cured_by_joining_the_parts_again(tmp_path: Path, mocker) -> None:
    source = tmp_path / "in_extracted.json"
    shutil.copyfile(GOLDEN, source)
    report = tmp_path / "r.jsonl"
    joiner_add = mocker.spy(parts.PartJoiner, "add")
    real_copy = parts._copy_part
    calls = {"n": 0}

    def copy_part(part: str, staged: Any, digest: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 3:  # once, while the flow joins the parts as chunks complete
            raise OSError(errno.EIO, "Input/output error")
        return real_copy(part, staged, digest)

    mocker.patch.object(parts, "_copy_part", side_effect=copy_part)
    # the parts are joined in the flow's process (where the fault is injected), the chunks scored by the pool
    result = select_content(input_path=str(source), report_path=str(report), chunk_size=40, task_runner="process")
    # 181 articles in 5 chunks: joined once as they completed (the third copy failed,
    # the joiner gave up), then once more, from the parts, by assemble-batch
    assert joiner_add.call_count == 2 * 5
    assert Path(result.output_path).read_bytes() == expected_output(source)
    doc = sc.parse_batch(source.read_bytes())
    assert report.read_bytes() == b"".join(report_lines(doc["articles"], sc.select_articles(doc["articles"])))
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

    mocker.patch("selection_storage.chunks.sc.select_article", side_effect=select_article)
    state = select_content(input_path=str(source), chunk_size=30, task_runner="in-process", return_state=True)
    assert state.is_failed() and "injected bug" in state.message
    assert leftover_files(tmp_path, {source}) == []


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_a_chunked_run_with_a_report_writes_what_the_one_piece_run_writes(tmp_path: Path) -> None:
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
        runs = -(-181 // options.get("chunk_size", 500))
        assert result.read_as == f"in {runs} run{'s' * (runs > 1)} of articles, one after the other in this process"
    assert outputs["whole"] == outputs["chunked"]
    assert orjson.loads(outputs["chunked"][0]) == orjson.loads(expected_output(source))
