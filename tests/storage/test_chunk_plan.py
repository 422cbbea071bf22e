"""The chunk plan, the scoring of one chunk and the joining of the parts, without Prefect.

These are the engine under the ``plan-batch``, ``select-chunk`` and
``assemble-batch`` tasks (:mod:`selection_storage.chunks`,
:mod:`selection_storage.parts`); the tasks themselves are tested through the
flow in ``tests/prefect/test_chunked_select.py``.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

import pytest

import selection_core as sc
from selection_storage import (
    ChunkOutcome,
    PartJoiner,
    assemble_parts,
    auto_chunk_size,
    discard_parts,
    find_stale_batches,
    is_transient_io_error,
    plan_batch,
    plan_jobs,
    report_lines,
    score_chunk,
    sha256_file,
)
from tests.support import ROOT
from tests.support.prefect_fixtures import expected_output, leftover_files

GOLDEN = ROOT / "tests" / "data" / "aeb_batch_extracted.json"


def _index_row(article: dict[str, Any], selection: sc.Selection) -> dict[str, Any]:
    return {"index": selection.index, "selected": selection.selected}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "in_extracted.json"
    shutil.copyfile(GOLDEN, path)
    return path


def _expected_report(source: Path) -> bytes:
    doc = sc.parse_batch(source.read_bytes())
    return b"".join(report_lines(doc["articles"], sc.select_articles(doc["articles"])))


def test_the_plan_delimits_every_article_and_fingerprints_the_input(source: Path) -> None:
    plan = plan_batch(source, 1)
    doc = sc.parse_batch(source.read_bytes())
    assert plan.layout is not None and plan.doc is None
    assert plan.article_count == len(doc["articles"])
    assert plan.sha256 == sha256_file(source) and plan.size_bytes == source.stat().st_size
    assert plan.envelope == {k: ([] if k == "articles" else v) for k, v in doc.items()}


@pytest.mark.parametrize("raw", [b"", b"[]", b"{not json", b'{"articles": {}}', b'{"articles": [], "articles": []}'])
def test_the_plan_refuses_an_invalid_envelope_as_the_whole_parse_does(tmp_path: Path, raw: bytes) -> None:
    """(The articles themselves are validated by the chunk that scores them.)"""
    bad = tmp_path / "bad_extracted.json"
    bad.write_bytes(raw)
    with pytest.raises(sc.InvalidBatchError) as planned:
        plan_batch(bad)
    with pytest.raises(sc.InvalidBatchError) as whole:
        sc.parse_batch(bad.read_bytes(), str(bad))
    assert str(planned.value) == str(whole.value)


@pytest.mark.parametrize("chunk_size", [1, 17, 60, 10_000])
def test_chunks_scored_and_joined_write_the_bytes_of_the_whole_batch(
    source: Path, tmp_path: Path, chunk_size: int
) -> None:
    output, report = tmp_path / "out.json", tmp_path / "out.jsonl"
    plan = plan_batch(source, 1)
    jobs = plan_jobs(plan, chunk_size, output, report, table_rows=5)
    outcomes = [score_chunk(job, _index_row) for job in jobs]
    assert [row["index"] for o in outcomes for row in o.rows] == list(range(min(5, plan.article_count)))
    assert sum(len(o) for o in outcomes) == plan.article_count
    written = assemble_parts(plan.envelope, outcomes, output, report, plan.format)
    assert output.read_bytes() == expected_output(source)
    assert report.read_bytes() == _expected_report(source)
    assert written.sha256 == sha256_file(output) and written.size_bytes == output.stat().st_size
    assert leftover_files(tmp_path, {source, output, report}) == []


def test_a_joiner_fed_as_chunks_complete_is_completed_by_the_assembly(source: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    plan = plan_batch(source, 1)
    jobs = plan_jobs(plan, 40, output, None, table_rows=0)
    joiner = PartJoiner(plan.envelope, plan.article_count > 0, output, None, plan.format)
    outcomes = []
    for job in jobs:
        outcomes.append(score_chunk(job, _index_row))
        joiner.add(outcomes[-1])
    assert joiner.usable and joiner.error is None
    written = assemble_parts(plan.envelope, outcomes, output, None, plan.format, joined=joiner)
    assert output.read_bytes() == expected_output(source)
    assert written.sha256 == sha256_file(output)
    assert leftover_files(tmp_path, {source, output}) == []


def test_a_joiner_that_failed_is_unusable_and_the_assembly_joins_the_parts_again(source: Path, tmp_path: Path) -> None:
    output, report = tmp_path / "out.json", tmp_path / "out.jsonl"
    plan = plan_batch(source, 1)
    jobs = plan_jobs(plan, 50, output, report, table_rows=0)
    outcomes = [score_chunk(job, _index_row) for job in jobs]
    joiner = PartJoiner(plan.envelope, True, output, report, plan.format)
    joiner.add(ChunkOutcome(0, 1, outcomes[0].summary, [], str(tmp_path / "missing-part"), outcomes[0].report_part))
    assert not joiner.usable and isinstance(joiner.error, FileNotFoundError)
    parts = {Path(p) for o in outcomes for p in (o.output_part, o.report_part) if p is not None}
    assert leftover_files(tmp_path, {source} | parts) == []  # its staged files are gone, the parts stay
    with pytest.raises(RuntimeError, match="failed earlier"):
        joiner.complete()
    assemble_parts(plan.envelope, outcomes, output, report, plan.format, joined=joiner)
    assert output.read_bytes() == expected_output(source)
    assert report.read_bytes() == _expected_report(source)
    assert leftover_files(tmp_path, {source, output, report}) == []


def test_discard_parts_removes_what_exists_and_never_raises(source: Path, tmp_path: Path) -> None:
    plan = plan_batch(source, 1)
    jobs = plan_jobs(plan, 30, tmp_path / "out.json", tmp_path / "out.jsonl", table_rows=0)
    for job in jobs[:2]:
        score_chunk(job, _index_row)
    discard_parts(jobs)
    discard_parts(jobs)  # nothing left: still no error
    assert leftover_files(tmp_path, {source}) == []


def test_a_chunk_of_a_file_changed_since_the_plan_is_refused(source: Path, tmp_path: Path) -> None:
    plan = plan_batch(source, 1)
    jobs = plan_jobs(plan, 50, tmp_path / "out.json", None, table_rows=0)
    source.write_bytes(source.read_bytes() + b" ")
    with pytest.raises(sc.SelectionError, match="changed while it was being read"):
        score_chunk(jobs[0], _index_row)
    assert leftover_files(tmp_path, {source}) == []


def test_the_automatic_chunk_size_stays_in_its_bounds() -> None:
    assert auto_chunk_size(0, 1) == 500
    assert auto_chunk_size(100_000, 0) == 25_000
    assert auto_chunk_size(80_000, 2) == 10_000


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        pytest.param(OSError(errno.EIO, "Input/output error"), True, id="EIO"),
        pytest.param(OSError(errno.ENOSPC, "No space left on device"), False, id="ENOSPC"),
        pytest.param(OSError(errno.EXDEV, "Invalid cross-device link"), False, id="EXDEV"),
        pytest.param(OSError("no errno"), False, id="no-errno"),
    ],
)
def test_only_the_listed_errnos_are_transient(exc: BaseException, transient: bool) -> None:
    assert is_transient_io_error(exc) is transient


def test_stale_batches_are_those_without_an_up_to_date_selection(tmp_path: Path) -> None:
    fresh, stale = tmp_path / "a_extracted.json", tmp_path / "sub" / "b_extracted.json"
    stale.parent.mkdir()
    for path in (fresh, stale):
        path.write_bytes(b"{}")
    (tmp_path / "a_extracted_selected.json").write_bytes(b"{}")
    assert find_stale_batches(tmp_path) == [stale]
