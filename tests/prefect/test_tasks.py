"""The Prefect tasks through ``.fn()`` (no Prefect API): each one call into the layers below, checked against them."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import orjson
import pytest

import selection_core as sc
from content_selection.shell.logs import ENGINE_EXIT_MESSAGE, UserErrorFilter
from content_selection.shell.progress_artifacts import artifact_progress, follow_progress
from content_selection.tasks.artifacts import component_versions
from content_selection.tasks.selection import find_stale_batches, select_batch, select_chunk
from selection_core.errors import InvalidBatchError
from selection_core.evidence import report_entry
from selection_engine.engine import discard_parts, plan_batch, plan_jobs
from selection_storage.directory import find_stale_batches as storage_scan
from selection_storage.paths import RunPaths
from tests.support import sha256_file
from tests.support.prefect_fixtures import expected_output

pytestmark = pytest.mark.usefixtures("no_data_root_env")


# --- select a batch, select a chunk ----------------------------------------------------


def test_select_batch_writes_the_cores_bytes_and_report(batch_factory, tmp_path: Path) -> None:
    path = batch_factory(n_articles=5)
    paths = RunPaths(path, tmp_path / "out.json", tmp_path / "report.jsonl", None)
    selected = select_batch.fn(paths, max_table_rows=3)
    assert paths.output.read_bytes() == expected_output(path)
    assert selected.output_sha256 == sha256_file(paths.output) and selected.input_sha256 == sha256_file(path)
    assert selected.evidence is not None and [r["index"] for r in selected.evidence.rows] == [0, 1, 2]
    doc = sc.parse_batch(path.read_bytes())
    selections = sc.select_articles(doc["articles"])
    lines = paths.report.read_bytes().splitlines()
    assert [orjson.loads(line) for line in lines] == [report_entry(a, s) for a, s in zip(doc["articles"], selections)]
    select_batch.fn(paths, max_table_rows=3)  # a retry writes the same bytes
    assert paths.output.read_bytes() == expected_output(path)


def test_the_log_gives_the_inputs_size_and_the_outputs_each_their_own(batch_factory, tmp_path: Path, caplog) -> None:
    path = batch_factory(n_articles=5)
    paths = RunPaths(path, tmp_path / "out.json", None, None)
    with caplog.at_level(logging.INFO):
        select_batch.fn(paths, max_table_rows=0)
    lines = [r.getMessage() for r in caplog.records]
    (read,) = [line for line in lines if line.startswith("Read ")]
    (wrote,) = [line for line in lines if line.startswith("Wrote ")]
    assert f"({path.stat().st_size} bytes, sha256 {sha256_file(path)})" in read
    assert f": {paths.output.stat().st_size} bytes, sha256 {sha256_file(paths.output)}" in wrote
    assert path.stat().st_size != paths.output.stat().st_size


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[]", id="root-not-object"),
        pytest.param(b'{"articles": {}}', id="articles-not-list"),
    ],
)
def test_select_batch_refuses_invalid_batches(batch_factory, tmp_path: Path, raw: bytes) -> None:
    paths = RunPaths(batch_factory(raw=raw), tmp_path / "out.json", None, None)
    with pytest.raises(InvalidBatchError):
        select_batch.fn(paths, max_table_rows=0)


def test_select_chunk_writes_its_parts(batch_factory, tmp_path: Path) -> None:
    path = batch_factory(n_articles=6)
    jobs = plan_jobs(plan_batch(path, chunk_articles=4), tmp_path / "out.json", None, parts="0123456789abcdef")
    selected = select_chunk.fn(jobs[1])
    assert selected.summary.articles == 2 and selected.output is None
    assert Path(jobs[1].output_part).exists()
    discard_parts(jobs)


# --- artifacts and the directory scan, through the tasks ------------------------------


def test_component_versions_name_the_core_and_the_libraries() -> None:
    versions = component_versions()
    assert list(versions) == ["selection_core", "ftfy", "regex", "prefect"]
    assert versions["selection_core"] == sc.__version__
    assert all(isinstance(v, str) and v for v in versions.values())


def test_find_stale_batches_task_is_the_storage_scan(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a_extracted.json", "sub/b_extracted.json", "sub/b_extracted_selected.json"):
        (tmp_path / name).write_text("{}")
    assert find_stale_batches.fn(tmp_path) == storage_scan(tmp_path) != []


def test_progress_outside_a_run_goes_to_the_follower_only_while_followed() -> None:
    seen: list[int] = []
    with follow_progress({"k": lambda done, total: seen.append(done)}):
        progress = artifact_progress("k", "outside a run")
        assert progress is not None
        progress(3, 4)
    assert seen == [3] and artifact_progress("k", "outside a run") is None


# --- the run log's one rule for refusals ------------------------------------------------------


def _record(message: str, error: BaseException) -> logging.LogRecord:
    try:
        raise error
    except BaseException:
        return logging.LogRecord("prefect.flow_runs", logging.ERROR, __file__, 1, message, (), sys.exc_info())


def test_a_refusal_keeps_its_one_error_line_without_prefects_copy_or_a_traceback() -> None:
    refusal = InvalidBatchError("/in/b_extracted.json: no such file; check the input path")
    flt = UserErrorFilter()
    assert flt.filter(_record(ENGINE_EXIT_MESSAGE, refusal)) is False  # the engine's copy, under the run's name
    assert flt.filter(_record(f"Task run failed with exception: {refusal!r}", refusal)) is False  # the task's copy
    bug = _record("Task run failed with exception: RuntimeError('a bug')", RuntimeError("a bug"))
    assert flt.filter(bug) is True and bug.exc_info is not None
    ours = _record("%s", refusal)
    assert flt.filter(ours) is True and ours.exc_info is None and ours.user_error is True
    crash = _record(ENGINE_EXIT_MESSAGE, RuntimeError("a bug"))
    assert flt.filter(crash) is True and crash.exc_info is not None  # a real crash keeps all it says
