"""How failures look on a real server (the session's ``server`` fixture), read back through the API.

* A refusal (a path outside the data root, an invalid batch) ends the flow run
  Failed, with the one-line message as its state message and in its logs, and no
  traceback anywhere in the run's logs (flow and task runs).
* A ``select-directory`` run with one truncated batch among four: that file's
  ``select-batch-file`` task run is Failed, the three others Completed, and the
  run's message names the file once.

The flows run in subprocesses given ``Server.env``, as a deployment's runs do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from tests.support import ROOT
from tests.support.prefect_server import RUN_SECONDS, Server

pytestmark = [pytest.mark.server, pytest.mark.slow]

SOURCE_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

#: Calls a flow of this project with JSON keyword arguments; prints the flow run's id.
_RUN_FLOW = (
    "import importlib, json, sys\n"
    "module, name = sys.argv[1].rsplit('.', 1)\n"
    "flow = getattr(importlib.import_module(module), name)\n"
    "state = flow(**json.loads(sys.argv[2]), return_state=True)\n"
    "print(state.state_details.flow_run_id)\n"
)


def _run_flow(server: Server, flow: str, **parameters: Any) -> UUID:
    import json

    result = subprocess.run(
        [sys.executable, "-c", _RUN_FLOW, flow, json.dumps(parameters)],
        cwd=ROOT,
        env=server.env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_SECONDS,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return UUID(result.stdout.strip().splitlines()[-1])


def _flow_run_and_logs(server: Server, flow_run_id: UUID) -> tuple[Any, list[str]]:
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with server.client() as client:
        flow_run = client.read_flow_run(flow_run_id)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    return flow_run, [log.message for log in logs]


def _task_runs(server: Server, flow_run_id: UUID) -> list[Any]:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with server.client() as client:
        return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))


def _assert_refused(server: Server, flow_run_id: UUID, fragment: str) -> str:
    flow_run, logs = _flow_run_and_logs(server, flow_run_id)
    message = flow_run.state.message
    assert flow_run.state.is_failed(), flow_run.state
    assert fragment in message
    assert "\n" not in message and not message.startswith("Flow run encountered an exception")
    assert message in logs  # the one line, logged as it is
    assert logs, "the run's logs reached the server"
    assert not [line for line in logs if "Traceback" in line or "Encountered exception" in line]
    return message


def test_a_path_outside_the_data_root_fails_the_run_with_its_one_line(server: Server, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "elsewhere_extracted.json"
    outside.write_bytes(SOURCE_BATCH.read_bytes())

    flow_run_id = _run_flow(
        server, "content_selection.flows.select_content.select_content", input_path=str(outside), data_root=str(root)
    )

    message = _assert_refused(server, flow_run_id, "outside the data root")
    assert message.endswith("(move the file there or change the data_root parameter)")
    assert not (tmp_path / "elsewhere_extracted_selected.json").exists()
    [check_paths] = [t for t in _task_runs(server, flow_run_id) if t.name.startswith("check-paths")]
    assert check_paths.state.is_failed()


def test_an_invalid_batch_fails_the_run_with_its_one_line(server: Server, tmp_path: Path) -> None:
    batch = tmp_path / "b_extracted.json"
    batch.write_bytes(SOURCE_BATCH.read_bytes()[:5000])  # truncated

    flow_run_id = _run_flow(server, "content_selection.flows.select_content.select_content", input_path=str(batch))

    message = _assert_refused(server, flow_run_id, "never ends")
    assert message.startswith(f"{batch}: ")
    assert not (tmp_path / "b_extracted_selected.json").exists()


def test_a_refused_extraction_fails_the_run_with_its_one_line(server: Server, tmp_path: Path) -> None:
    flow_run_id = _run_flow(
        server,
        "content_selection.flows.extract_articles.extract_articles",
        pages=str(tmp_path / "missing"),
        emit_event=False,
    )
    _assert_refused(server, flow_run_id, str(tmp_path / "missing"))


def test_the_failed_file_of_a_directory_run_is_a_failed_task_run(server: Server, tmp_path: Path) -> None:
    folder = tmp_path / "batches"
    folder.mkdir()
    for name in ("a", "b", "d"):
        (folder / f"{name}_extracted.json").write_bytes(SOURCE_BATCH.read_bytes())
    truncated = folder / "c_extracted.json"
    truncated.write_bytes(SOURCE_BATCH.read_bytes()[:5000])

    flow_run_id = _run_flow(server, "content_selection.flows.select_directory.select_directory", directory=str(folder))

    flow_run, logs = _flow_run_and_logs(server, flow_run_id)
    assert flow_run.state.is_failed()
    message = flow_run.state.message
    assert message.startswith("1 of 4 batch(es) failed, the others were written: ")
    assert message.count(truncated.name) == 1
    assert "never ends" in message
    assert not [line for line in logs if "Traceback" in line]

    per_file = [t for t in _task_runs(server, flow_run_id) if t.name.startswith("select-batch-file")]
    assert len(per_file) == 4
    failed = [t for t in per_file if t.state.is_failed()]
    assert [t.state.is_completed() for t in per_file].count(True) == 3
    assert len(failed) == 1 and truncated.name in failed[0].state.message
    assert failed[0].name == f"select-batch-file-{truncated.name}"  # the graph names the file
    for name in ("a", "b", "d"):
        assert (folder / f"{name}_extracted_selected.json").exists()
    assert not (folder / "c_extracted_selected.json").exists()
