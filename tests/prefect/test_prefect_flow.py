"""Flow runs of ``select-content`` and ``select-directory`` under one session-scoped test harness.

Artifacts and task runs are read back through the Prefect client. Task-run
states reach the API through events, so reads of task runs wait (bounded) for
the API to catch up; nothing here depends on how long anything takes.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import selection_core as sc
import selection_engine.engine
import selection_storage.stores.disk
from content_selection.flows.select_content import SelectionRunSummary, select_content
from content_selection.flows.select_directory import BatchesFailedError, DirectoryRunSummary, select_directory
from content_selection.shell.params import STAGE_TAG
from content_selection.tasks.selection import PROGRESS_ARTIFACT_KEY
from selection_cli.main import main
from selection_core.errors import InvalidBatchError, ReadError, UnsafePathError, WriteError
from selection_core.evidence import CLOSEST_CALLS_ARTIFACT_KEY, SCORES_ARTIFACT_KEY, SUMMARY_ARTIFACT_KEY
from selection_storage.atomic import HOST_TAG, StagedFile
from tests.support.prefect_fixtures import artifacts_of, expected_output, leftover_files, task_runs_of

pytestmark = pytest.mark.usefixtures("prefect_harness", "no_data_root_env")

#: Upper bound of the wait for task-run states to reach the API (not a timing assertion).
API_CATCH_UP_SECONDS = 60


def wait_for_task_runs(flow_run_id: UUID, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Task runs of a flow run by task name, once ``done(runs)`` holds (bounded wait)."""
    deadline = time.monotonic() + API_CATCH_UP_SECONDS
    while True:
        runs = {run.name.rsplit("-", 1)[0]: run for run in asyncio.run(task_runs_of(flow_run_id))}
        if done(runs) or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def all_final(names: set[str]) -> Callable[[dict[str, Any]], bool]:
    def check(runs: dict[str, Any]) -> bool:
        return set(runs) == names and all(run.state and run.state.is_final() for run in runs.values())

    return check


def test_flow_writes_the_core_output_and_returns_a_summary(batch_factory, tmp_path: Path) -> None:
    source = batch_factory(n_articles=5)
    report = tmp_path / "report.jsonl"

    result = select_content(input_path=str(source), report_path=str(report))

    output = tmp_path / "b_extracted_selected.json"
    assert isinstance(result, SelectionRunSummary)
    assert output.read_bytes() == expected_output(source)
    assert result.output_path == str(output)
    assert result.report_path == str(report)
    assert result.articles == 5
    assert result.input_sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert result.output_sha256 == hashlib.sha256(output.read_bytes()).hexdigest()
    summary = sc.summarize(sc.select_articles(json.loads(source.read_bytes())["articles"]))
    assert result.by_extractor == summary.by_extractor
    assert result.by_reason == summary.by_reason
    assert len(report.read_bytes().splitlines()) == 5
    assert leftover_files(tmp_path, {source, output, report}) == []


def test_artifacts_are_built_from_the_explanations(batch_factory, tmp_path: Path) -> None:
    source = batch_factory(n_articles=7)
    state = select_content(input_path=str(source), max_table_rows=3, return_state=True)
    assert state.is_completed()
    result = state.result()
    artifacts = asyncio.run(artifacts_of(state.state_details.flow_run_id))
    by_key = {a.key: a for a in artifacts}
    assert set(by_key) == {SCORES_ARTIFACT_KEY, CLOSEST_CALLS_ARTIFACT_KEY, SUMMARY_ARTIFACT_KEY, PROGRESS_ARTIFACT_KEY}

    table = by_key[SCORES_ARTIFACT_KEY]
    assert table.type == "table"
    rows = json.loads(table.data)
    assert [row["index"] for row in rows] == [0, 1, 2]
    assert "3 of 7 articles" in table.description and "max_table_rows=3" in table.description
    selections = sc.select_articles(json.loads(source.read_bytes())["articles"])
    assert [row["selected"] for row in rows] == [s.selected for s in selections[:3]]
    assert [row["reason"] for row in rows] == [s.reason.value for s in selections[:3]]
    assert [row["article"] for row in rows] == ["a0", "a1", "a2"]
    assert len(rows[0]) <= 8

    calls = by_key[CLOSEST_CALLS_ARTIFACT_KEY]
    assert calls.type == "markdown" and calls.data.startswith("# Closest calls: b_extracted.json")

    summary = by_key[SUMMARY_ARTIFACT_KEY]
    assert summary.type == "markdown"
    assert "| Articles | 7 |" in summary.data
    for name, count in result.by_extractor.items():
        assert f"| {name} | {count} |" in summary.data
    assert f"| Input SHA-256 | `{result.input_sha256}` |" in summary.data
    assert f"| Output SHA-256 | `{result.output_sha256}` |" in summary.data
    assert f"| selection_core | {sc.__version__} |" in summary.data

    progress = by_key[PROGRESS_ARTIFACT_KEY]
    assert progress.type == "progress"
    assert float(progress.data) == 100.0


def test_a_transient_read_failure_is_retried_and_the_run_succeeds(batch_factory, tmp_path: Path, mocker) -> None:
    source = batch_factory(n_articles=2)
    real_read = selection_storage.stores.disk.read_span
    calls: list[Path] = []

    def flaky_read(path: Path, *args: Any) -> bytearray:
        calls.append(path)
        if len(calls) == 1:
            raise ReadError(f"{path}: read failed (Input/output error); retry later", errno.EIO)
        return real_read(path, *args)

    mocker.patch("selection_storage.stores.disk.read_span", side_effect=flaky_read)  # what the disk store calls
    state = select_content(input_path=str(source), return_state=True)

    assert state.is_completed()
    assert len(calls) == 2
    assert (tmp_path / "b_extracted_selected.json").read_bytes() == expected_output(source)
    names = {"check-paths", "select-batch", "publish-artifacts"}
    runs = wait_for_task_runs(state.state_details.flow_run_id, all_final(names))
    assert runs["select-batch"].run_count == 2
    assert runs["select-batch"].state.is_completed()


def test_a_transient_write_failure_is_retried(batch_factory, tmp_path: Path, mocker) -> None:
    source = batch_factory(n_articles=2)
    real_add = selection_engine.engine._Joiner.add
    attempts: list[int] = []

    def flaky_add(joiner: Any, *args: Any) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise WriteError("out: write failed (Input/output error)", errno.EIO, transient=True)
        real_add(joiner, *args)

    mocker.patch.object(selection_engine.engine._Joiner, "add", autospec=True, side_effect=flaky_add)
    state = select_content(input_path=str(source), return_state=True)
    assert state.is_completed()
    assert len(attempts) == 2
    assert (tmp_path / "b_extracted_selected.json").read_bytes() == expected_output(source)
    assert leftover_files(tmp_path, {source, tmp_path / "b_extracted_selected.json"}) == []


def test_an_invalid_batch_fails_on_the_first_try_and_writes_nothing(batch_factory, tmp_path: Path) -> None:
    source = batch_factory(raw=b'{"articles": [{"ok": 1}, 2]}')
    state = select_content(input_path=str(source), report_path=str(tmp_path / "r.jsonl"), return_state=True)

    assert state.is_failed()
    with pytest.raises(InvalidBatchError, match=r"articles\[1\]") as refused:
        state.result()
    assert state.message == str(refused.value)  # the one line, not "Flow run encountered an exception"
    assert leftover_files(tmp_path, {source}) == []
    runs = wait_for_task_runs(state.state_details.flow_run_id, all_final({"check-paths", "select-batch"}))
    assert set(runs) == {"check-paths", "select-batch"}  # nothing after the selection step ran
    assert runs["select-batch"].run_count == 1
    assert runs["select-batch"].state.is_failed()


@pytest.mark.parametrize(
    "untrusted",
    [
        pytest.param(lambda root, outside: str(outside / "x_extracted.json"), id="outside-root"),
        pytest.param(lambda root, outside: f"{root}/../outside/x_extracted.json", id="dotdot-escape"),
        pytest.param(lambda root, outside: str(root / "link_extracted.json"), id="symlink-out"),
    ],
)
def test_a_path_outside_the_data_root_fails_and_writes_nothing(batch_factory, tmp_path: Path, untrusted) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    source = batch_factory(name="x_extracted.json", directory=outside)
    root.mkdir()
    (root / "link_extracted.json").symlink_to(source)

    state = select_content(
        input_path=untrusted(root, outside), data_root=str(root), require_data_root=True, return_state=True
    )

    assert state.is_failed()
    with pytest.raises(UnsafePathError, match="outside the data root") as refused:
        state.result()
    assert state.message == str(refused.value)
    assert refused.value.exit_code == 65
    assert leftover_files(tmp_path, {source, root / "link_extracted.json"}) == []
    runs = wait_for_task_runs(state.state_details.flow_run_id, all_final({"check-paths"}))
    assert set(runs) == {"check-paths"}  # the batch was never read


def test_a_run_that_requires_a_data_root_fails_without_one(batch_factory, tmp_path: Path) -> None:
    source = batch_factory()
    state = select_content(input_path=str(source), require_data_root=True, return_state=True)
    assert state.is_failed()
    with pytest.raises(UnsafePathError, match="no data root is configured"):
        state.result()
    assert leftover_files(tmp_path, {source}) == []


def test_the_environment_data_root_confines_runs(batch_factory, data_root: Path) -> None:
    inside = batch_factory(name="in_extracted.json", directory=data_root / "day1")
    result = select_content(input_path="day1/in_extracted.json", require_data_root=True)
    assert Path(result.output_path) == data_root.resolve() / "day1" / "in_extracted_selected.json"
    assert Path(result.output_path).read_bytes() == expected_output(inside)


@pytest.mark.parametrize(
    "parameters",
    [
        pytest.param({"input_path": "x_extracted.json", "max_table_rows": -1}, id="negative-cap"),
        pytest.param({"input_path": "x_extracted.json", "max_table_rows": "many"}, id="cap-not-int"),
        pytest.param({"input_path": ""}, id="empty-input"),
    ],
)
def test_invalid_parameters_are_refused_before_the_run(parameters: dict[str, Any]) -> None:
    state = select_content(**parameters, return_state=True)
    assert state.is_failed()
    assert "parameters" in (state.message or "").lower()


@pytest.mark.slow
def test_select_directory_processes_each_stale_file_independently(batch_factory, tmp_path: Path) -> None:
    folder = tmp_path / "batches"
    good = batch_factory(name="a_extracted.json", directory=folder, n_articles=2)
    bad = batch_factory(name="b_extracted.json", directory=folder, raw=b"not json at all")
    nested = batch_factory(name="c_extracted.json", directory=folder / "2024" / "05", n_articles=1)
    done = batch_factory(name="d_extracted.json", directory=folder, n_articles=1)
    done_output = folder / "d_extracted_selected.json"
    done_output.write_bytes(b"up to date\n")

    state = select_directory(directory=str(folder), return_state=True)

    assert state.is_failed()
    assert "1 of 3 batch(es) failed" in state.message
    assert state.message.count(str(bad)) == 1  # named once, with its error
    assert isinstance(state.result(raise_on_failure=False), BatchesFailedError)
    assert (folder / "a_extracted_selected.json").read_bytes() == expected_output(good)
    assert (folder / "2024" / "05" / "c_extracted_selected.json").read_bytes() == expected_output(nested)
    assert not (folder / "b_extracted_selected.json").exists()
    assert done_output.read_bytes() == b"up to date\n"  # not stale: not redone
    assert leftover_files(
        folder,
        {good, bad, nested, done, done_output, folder / "a_extracted_selected.json",
         folder / "2024" / "05" / "c_extracted_selected.json"},
    ) == []  # fmt: skip

    # Fix the bad batch: the next run selects only it, and succeeds.
    bad.write_bytes(good.read_bytes())
    result = select_directory(directory=str(folder))
    assert isinstance(result, DirectoryRunSummary)
    assert result.selected == [str(folder / "b_extracted_selected.json")]
    assert result.failed == []


def test_the_scheduled_scan_removes_staged_files_whose_writer_is_gone_and_keeps_a_live_ones(
    batch_factory, tmp_path: Path
) -> None:
    """An up-to-date batch is not selected again, yet the scan still removes the killed run's staged file beside it
    (a 298 MB one stayed for ever before); a staged file whose writer holds its lock is kept."""
    folder = tmp_path / "batches" / "2024"
    source = batch_factory(name="a_extracted.json", directory=folder, n_articles=2)
    output = folder / "a_extracted_selected.json"
    output.write_bytes(b"up to date\n")
    orphan = folder / f".a_extracted_selected.json.{HOST_TAG}-4194000.{'ab' * 8}.cs-tmp"
    orphan.write_bytes(b'{"articles": [')  # a killed run's: nobody holds its lock
    live = StagedFile(folder / "b_extracted_selected.json")  # a running writer's
    try:
        result = select_directory(directory=str(tmp_path / "batches"))
        assert result.selected == [] and output.read_bytes() == b"up to date\n"
        assert not orphan.exists() and live.path.exists()
    finally:
        live.discard()
    assert leftover_files(tmp_path, {source, output}) == []


def test_the_scans_subflow_runs_carry_the_stages_tag(batch_factory, tmp_path: Path) -> None:
    """A subflow run has no deployment, so no deployment tags: without the stage's tag the crash automation would
    not see it, and a killed scan would leave it Running."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentTaskRunId

    batch_factory(name="t_extracted.json", directory=tmp_path / "tagged", n_articles=1)
    select_directory(directory=str(tmp_path / "tagged"))
    with get_client(sync_client=True) as client:
        subflows = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_task_run_id=FlowRunFilterParentTaskRunId(is_null_=False))
        )
    mine = [r for r in subflows if r.parameters.get("input_path") == str(tmp_path / "tagged" / "t_extracted.json")]
    assert len(mine) == 1 and STAGE_TAG in mine[0].tags


def test_select_directory_defaults_to_the_data_root(batch_factory, data_root: Path) -> None:
    source = batch_factory(name="r_extracted.json", directory=data_root, n_articles=1)
    result = select_directory()
    assert result.directory == str(data_root)
    assert result.selected == [str(data_root.resolve() / "r_extracted_selected.json")]
    assert (data_root / "r_extracted_selected.json").read_bytes() == expected_output(source)


def test_cli_run_prints_one_line_and_exits_zero(batch_factory, tmp_path: Path, capsys) -> None:
    source = batch_factory(n_articles=3)
    output = tmp_path / "chosen.json"
    assert main(["run", str(source), "--output", str(output), "--max-rows", "1"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["selected 3 articles (" + out[0].split("(", 1)[1]]
    assert out[0].endswith(f"-> {output}")
    assert output.read_bytes() == expected_output(source)


@pytest.mark.parametrize(
    ("make_args", "exit_code", "message"),
    [
        pytest.param(lambda p, t: [str(t / "missing_extracted.json")], 65, "no such file", id="missing-input"),
        pytest.param(lambda p, t: [str(p), "--output", str(p)], 65, "input file itself", id="output-is-input"),
        pytest.param(lambda p, t: [str(p), "--data-root", str(t / "root")], 65, "data root", id="root-missing"),
        pytest.param(lambda p, t: [str(p), "--max-rows", "-3"], 2, "--max-rows", id="negative-rows"),
    ],
)
def test_cli_run_errors_are_one_line_with_the_error_exit_code(
    batch_factory, tmp_path: Path, capsys, make_args, exit_code: int, message: str
) -> None:
    source = batch_factory()
    assert main(["run", *make_args(source, tmp_path)]) == exit_code
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("content-selection run: error: ")
    assert message in lines[0]
    assert leftover_files(tmp_path, {source}) == []


def test_cli_run_invalid_batch_exit_code(batch_factory, tmp_path: Path, capsys) -> None:
    source = batch_factory(raw=b"[1, 2]")
    assert main(["run", str(source)]) == sc.EXIT_INVALID_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "root" in err
