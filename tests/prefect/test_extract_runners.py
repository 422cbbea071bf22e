"""The ``extract-articles`` flow on every task runner: the same bytes, one task run per chunk of pages
in-process and on Dask, none on the process runner's plain workers (the planning and the join themselves,
without Prefect: ``tests/extraction/test_chunks.py``).

Real extractors on the real pages of ``tests/data/pages``, in-process in chunks
of 2, on a process pool and on a local Dask cluster; each written batch is
compared with the default run (the engine's own process pool). Task runs are
read back through the Prefect client. Waits are bounded; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from content_selection.flows.extract_articles import extract_articles
from content_selection.tasks.extract import PAGE_CHUNK_TASK_NAME
from tests.support import PAGES
from tests.support.prefect_fixtures import leftover_files, task_runs_of

pytestmark = pytest.mark.usefixtures("prefect_harness", "no_data_root_env")

N_PAGES = len(list(PAGES.glob("*.html.gz")))

#: Upper bound of the wait for the API to catch up (not a timing assertion).
WAIT_SECONDS = 60


@pytest.fixture(scope="module")
def default_bytes(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> bytes:
    """The batch written by the default run (no runner, no chunks) on the test pages."""
    output = tmp_path_factory.mktemp("default") / "out.json"
    state = extract_articles(pages=str(PAGES), output_path=str(output), emit_event=False, return_state=True)
    assert state.is_completed(), state.message
    return output.read_bytes()


def _wait_for_task_runs(flow_run_id: UUID, done: Callable[[list[Any]], bool]) -> list[Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        runs = asyncio.run(task_runs_of(flow_run_id))
        if done(runs) or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("runner", "pages_per_chunk"),
    [
        pytest.param("in-process", 2, id="in-process-chunk-2"),
        pytest.param("process", None, id="process"),
        pytest.param("dask", 4, id="dask-local-cluster"),
    ],
)
def test_every_runner_writes_the_default_bytes(
    default_bytes: bytes, tmp_path: Path, runner: str, pages_per_chunk: int | None
) -> None:
    output = tmp_path / "out.json"
    state = extract_articles(
        pages=str(PAGES),
        output_path=str(output),
        emit_event=False,
        task_runner=runner,
        pages_per_chunk=pages_per_chunk,
        return_state=True,
    )
    assert state.is_completed(), state.message
    assert output.read_bytes() == default_bytes
    assert state.result().articles == N_PAGES
    assert leftover_files(tmp_path, {output}) == []

    chunks_are_task_runs = runner != "process"  # the process runner's plain workers run no Prefect
    runs = _wait_for_task_runs(
        state.state_details.flow_run_id,
        lambda rs: (
            any(r.name.startswith(PAGE_CHUNK_TASK_NAME) for r in rs) >= chunks_are_task_runs
            and any(r.name.startswith("publish-extraction-artifacts") for r in rs)
            and all(r.state and r.state.is_final() for r in rs)
        ),
    )
    chunk_runs = sorted(r.name for r in runs if r.name.startswith(f"{PAGE_CHUNK_TASK_NAME}-"))
    if not chunks_are_task_runs:
        assert chunk_runs == []
    elif pages_per_chunk is not None:
        starts = range(0, N_PAGES, pages_per_chunk)
        assert chunk_runs == [f"{PAGE_CHUNK_TASK_NAME}-{start:06d}" for start in starts]
    else:  # about 2 chunks per worker, never more chunks than pages
        assert 1 <= len(chunk_runs) <= N_PAGES
    assert not any(r.name.startswith("extract-pages") for r in runs)
    assert all(r.state.is_completed() for r in runs)
