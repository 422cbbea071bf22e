"""JSON Lines batches through the flows and ``run``: the bytes of ``select``, on every path.

``select-content`` in-process and on the process pool, ``select-directory`` over a
folder holding both formats, and ``content-selection run``. The expected bytes are
those ``select_file`` writes for the same input (tested against the core in
tests/storage/test_jsonl_batches.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from content_selection.flows.select_content import select_content
from content_selection.flows.select_directory import select_directory
from selection_cli.main import main
from selection_core.evidence import SUMMARY_ARTIFACT_KEY
from selection_engine import select_file
from tests.support import DATA
from tests.support.prefect_fixtures import artifacts_of, leftover_files

pytestmark = pytest.mark.usefixtures("prefect_harness", "no_data_root_env")

ARTICLES = orjson.loads((DATA / "aeb_batch_extracted.json").read_bytes())["articles"]


def lines_batch(path: Path, articles: list[dict] = ARTICLES) -> Path:
    path.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in articles))
    return path


def expected(source: Path, tmp_path: Path) -> tuple[bytes, bytes]:
    reference = tmp_path / "reference"
    reference.mkdir(exist_ok=True)
    result = select_file(source, reference / "out.jsonl", reference / "report.jsonl")
    return result.output_path.read_bytes(), (reference / "report.jsonl").read_bytes()


def test_select_content_writes_a_jsonl_batch_as_select_does_and_says_how_it_read_it(tmp_path: Path) -> None:
    source = lines_batch(tmp_path / "b_extracted.jsonl")
    output, report = expected(source, tmp_path)
    state = select_content(input_path=str(source), report_path=str(tmp_path / "r.jsonl"), return_state=True)
    assert state.is_completed(), state.message
    result = state.result()
    assert result.output_path == str(tmp_path / "b_extracted_selected.jsonl")
    assert Path(result.output_path).read_bytes() == output
    assert (tmp_path / "r.jsonl").read_bytes() == report
    assert result.read_as == "in 1 chunk of articles, one after the other in this process"
    (summary,) = [
        a for a in asyncio.run(artifacts_of(state.state_details.flow_run_id)) if a.key == SUMMARY_ARTIFACT_KEY
    ]
    assert "| Read | in 1 chunk of articles, one after the other in this process |" in summary.data
    assert result.input_sha256 in summary.data and result.output_sha256 in summary.data


def test_a_bad_line_fails_the_run_with_its_number_and_writes_nothing(tmp_path: Path) -> None:
    source = lines_batch(tmp_path / "b_extracted.jsonl")
    lines = source.read_bytes().split(b"\n")
    lines[170] = b'{"id": 1, "id": 2}'
    source.write_bytes(b"\n".join(lines))
    state = select_content(input_path=str(source), chunk_size=20, return_state=True)
    assert state.is_failed()
    assert state.message.startswith(f'{source}: line 171: $ has the key "id" more than once')
    assert leftover_files(tmp_path, {source}) == []


@pytest.mark.slow  # about 7 s: two scans and four subflow runs
def test_select_directory_selects_both_formats(tmp_path: Path) -> None:
    lines_batch(tmp_path / "a_extracted.jsonl", ARTICLES[:5])
    (tmp_path / "b_extracted.json").write_bytes((DATA / "aeb_batch_extracted.json").read_bytes())
    result = select_directory(directory=str(tmp_path))
    assert len(result.selected) == 2 and result.failed == []
    assert (tmp_path / "a_extracted_selected.jsonl").read_bytes() == expected(tmp_path / "a_extracted.jsonl", tmp_path)[
        0
    ]
    assert (tmp_path / "b_extracted_selected.json").is_file()


def test_run_selects_a_jsonl_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = lines_batch(tmp_path / "b_extracted.jsonl", ARTICLES[:20])
    assert main(["run", str(source)]) == 0
    assert (tmp_path / "b_extracted_selected.jsonl").read_bytes() == expected(source, tmp_path)[0]


@pytest.mark.slow
def test_the_process_pool_writes_the_same_jsonl_bytes(tmp_path: Path) -> None:
    source = lines_batch(tmp_path / "b_extracted.jsonl")
    output, report = expected(source, tmp_path)
    result = select_content(
        input_path=str(source), report_path=str(tmp_path / "r.jsonl"), task_runner="process", chunk_size=40
    )
    assert Path(result.output_path).read_bytes() == output and (tmp_path / "r.jsonl").read_bytes() == report
    assert result.read_as == "in 5 chunks of articles, in parallel on the process task runner"
