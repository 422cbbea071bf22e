"""Chunked selection on every task runner: the same bytes, one task run per chunk.

Runs the ``select-content`` flow on the real 181-article batch in-process, on a
process pool, on a local Dask cluster and on a Dask cluster started here as
separate ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1, and
compares the written bytes with the core's own output. Task runs are read back
through the Prefect client. Waits are bounded; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest

from content_selection.flows.select_content import select_content
from content_selection.flows.select_directory import select_directory
from content_selection.shell.runners import (
    DASK_ADDRESS_ENV,
    IN_FLIGHT_PER_WORKER,
    LOCAL_CLUSTER_KWARGS,
    TASK_RUNNER_ENV,
    TaskRunnerConfigError,
    TaskRunnerName,
    Workers,
    dispatch,
    map_in_order,
    plain_processes,
    resolve_task_runner,
)
from selection_cli.main import main
from selection_core.layout import Chunk
from selection_engine.engine import ChunkJob, select_file, select_job
from selection_storage.files import Version
from tests.support import ROOT
from tests.support.prefect_fixtures import expected_output, free_port, leftover_files, task_runs_of

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"
SAMPLE_BATCH = ROOT / "examples" / "sample_extracted.json"
N_GOLDEN = 181

#: Task runs every chunked run has besides its chunks.
FIXED_TASKS = {"check-paths", "publish-artifacts"}

#: Upper bound of every wait below (API catching up, a cluster starting); not a timing assertion.
WAIT_SECONDS = 90


# --- pure parts -----------------------------------------------------------------


def _job(start: int, stop: int, part: str = "/out/.o.json.1.0000000000000000.cs-tmp") -> ChunkJob:
    return ChunkJob(
        input_path="/in.json",
        storage_options={},
        identity=Version(2, "inode:1 mtime_ns:3"),
        chunk=Chunk(start, stop, 10 * start, 10 * stop),
        format_name="JSON",
        dataset=False,
        output_path="/out/o.json",
        output_part=part,
        report_path=None,
        report_part=None,
        table_rows=0,
        close_calls=0,
        owner_pid=1,
        owner_host="here",
    )


def test_a_chunk_names_its_dask_task_by_its_part_and_position() -> None:
    from dask.base import tokenize

    assert tokenize(_job(7, 9)) == tokenize(_job(7, 9))
    assert tokenize(_job(7, 9)) != tokenize(_job(8, 9))
    assert tokenize(_job(7, 9)) != tokenize(_job(7, 9, part="/out/.o.json.1.0000000000000001.cs-tmp"))


@pytest.mark.parametrize(
    ("name", "address", "env", "expected"),
    [
        pytest.param(None, None, {}, (TaskRunnerName.IN_PROCESS, None), id="default"),
        pytest.param("process", None, {}, (TaskRunnerName.PROCESS, None), id="process"),
        pytest.param(None, "tcp://127.0.0.1:8786", {}, (TaskRunnerName.DASK, "tcp://127.0.0.1:8786"), id="address"),
        pytest.param(None, None, {TASK_RUNNER_ENV: "dask"}, (TaskRunnerName.DASK, None), id="env-runner"),
        pytest.param(
            None, None, {DASK_ADDRESS_ENV: "tcp://[::1]:9000"}, (TaskRunnerName.DASK, "tcp://[::1]:9000"), id="env-addr"
        ),
        pytest.param("in-process", None, {TASK_RUNNER_ENV: "dask"}, (TaskRunnerName.IN_PROCESS, None), id="param-wins"),
    ],
)
def test_resolve_task_runner(monkeypatch, name, address, env, expected) -> None:
    monkeypatch.delenv(TASK_RUNNER_ENV, raising=False)
    monkeypatch.delenv(DASK_ADDRESS_ENV, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert resolve_task_runner(name, address) == expected


@pytest.mark.parametrize(
    ("name", "address", "message"),
    [
        pytest.param("threads", None, "unknown task runner", id="unknown"),
        pytest.param("dask", "127.0.0.1:8786", "tcp://HOST:PORT", id="no-scheme"),
        pytest.param("dask", "tcp://127.0.0.1", "tcp://HOST:PORT", id="no-port"),
        pytest.param("dask", "tcp://127.0.0.1:70000", "tcp://HOST:PORT", id="port-too-large"),
        pytest.param("process", "tcp://127.0.0.1:8786", "choose the dask task runner", id="address-without-dask"),
    ],
)
def test_bad_runner_settings_are_refused(monkeypatch, name, address, message) -> None:
    monkeypatch.delenv(TASK_RUNNER_ENV, raising=False)
    monkeypatch.delenv(DASK_ADDRESS_ENV, raising=False)
    with pytest.raises(TaskRunnerConfigError, match=message):
        resolve_task_runner(name, address)


def test_the_local_cluster_stays_on_loopback_with_two_single_thread_workers(monkeypatch) -> None:
    kwargs = LOCAL_CLUSTER_KWARGS
    assert kwargs["host"] == "127.0.0.1" and kwargs["n_workers"] == 2 and kwargs["threads_per_worker"] == 1
    assert kwargs["processes"] is True and kwargs["dashboard_address"] is None
    assert kwargs["scheduler_kwargs"]["dashboard_address"].startswith("127.0.0.1:")
    monkeypatch.delenv(TASK_RUNNER_ENV, raising=False)
    address = "tcp://scheduler.internal:8786"
    assert resolve_task_runner(None, address) == (TaskRunnerName.DASK, address)


@contextlib.contextmanager
def _threads(function: Callable[[Any], Any], submitted: list[Any], **kwargs: Any) -> Iterator[Workers]:
    """Workers that run ``function(job)`` on threads, one job at a time per "worker" (one worker)."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:

        def submit(key: Any, job: Any) -> concurrent.futures.Future[Any]:
            submitted.append(job)
            return pool.submit(function, job)

        yield Workers(submit, lambda: 1, **kwargs)


def test_map_in_order_keeps_order_bounds_the_window_and_waits_on_failure() -> None:
    first_may_end, third_started, stopped = threading.Event(), threading.Event(), threading.Event()

    def job(x: int) -> int:
        if x == 0:  # ends after the one after it: the order is kept all the same
            assert first_may_end.wait(WAIT_SECONDS)
        if x == 1:
            first_may_end.set()
        if x == 2:
            assert third_started.wait(WAIT_SECONDS)
            raise RuntimeError("boom")
        if x == 3:  # still running when the failure is seen, until the stop: waited for
            third_started.set()
            assert stopped.wait(WAIT_SECONDS)
            time.sleep(0.2)  # a dispatcher that did not wait would raise before this job ends
        return x * 10

    submitted: list[int] = []
    seen: list[int] = []

    def payloads() -> Iterator[int]:
        for i in range(6):
            # never more than IN_FLIGHT_PER_WORKER submitted-but-uncollected payloads when the next one is built
            assert len(submitted) - len(seen) <= IN_FLIGHT_PER_WORKER
            yield i

    with _threads(job, submitted) as workers:
        futures: list[concurrent.futures.Future[Any]] = []
        recorded = workers.submit

        def submit(key: Any, x: Any) -> concurrent.futures.Future[Any]:
            futures.append(recorded(key, x))
            return futures[-1]

        with pytest.raises(RuntimeError, match="boom"):
            for result in map_in_order(dataclasses.replace(workers, submit=submit, stop=stopped.set), payloads()):
                seen.append(result)
        assert seen == [0, 10]
        assert submitted == [0, 1, 2, 3]
        assert all(f.done() for f in futures)  # the one still running was waited for
        assert list(map_in_order(workers, [0, 1, 3])) == [0, 10, 30]


class _Result:
    """A task result that can be watched with a weak reference."""

    def __init__(self, value: int) -> None:
        self.value = value


def test_map_in_order_keeps_no_result_handed_over() -> None:
    watched: list[weakref.ref[_Result]] = []
    seen: list[int] = []
    with _threads(_Result, []) as workers:  # the helper under test is the only holder of the futures
        for result in map_in_order(workers, iter([5, 6, 7, 8])):
            gc.collect()
            # every result handed over before this one is gone: the helper kept none of them
            assert [ref() for ref in watched] == [None] * len(watched)
            watched.append(weakref.ref(result))
            seen.append(result.value)
    assert seen == [5, 6, 7, 8]


class _Died(Exception):
    pass


def test_a_job_whose_worker_died_is_sent_again_until_it_died_max_deaths_times_in_a_row_with_no_report() -> None:
    reports: deque[tuple[Any, int, int]] = deque()
    deaths = {"a": 0, "b": 0, "c": 0}
    lock = threading.Lock()

    def job(name: str) -> str:
        with lock:
            deaths[name] += 1
            died = deaths[name]
        if name == "a" and died <= 2:  # a: dies twice, with a page reported before its second death
            if died == 2:
                reports.append(("a", 1, 5))
            raise _Died(name)
        if name == "b":  # b: dies every time, reporting nothing
            raise _Died(name)
        return name

    reported: list[tuple[Any, int, int]] = []
    ticks: list[None] = []
    with _threads(job, [], reports=reports, deaths=(_Died,)) as workers:
        ends = dispatch(workers, [(n, n) for n in "abc"], max_deaths=2, every=0.05,
                        on_report=lambda *r: reported.append(r), on_tick=lambda: ticks.append(None))  # fmt: skip
        outcomes = {key: (future.exception() or future.result(), died) for key, future, died in ends}
    assert outcomes["a"] == ("a", 1)  # sent again after each death; the report between reset its count
    assert isinstance(outcomes["b"][0], _Died) and outcomes["b"][1] == 2  # failed at its second death in a row
    assert outcomes["c"] == ("c", 0)
    assert deaths == {"a": 3, "b": 2, "c": 1}
    assert reported == [("a", 1, 5)] and ticks


# --- flow runs --------------------------------------------------------------------


def _wait_for_task_runs(flow_run_id: UUID, done: Callable[[list[Any]], bool]) -> list[Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        runs = asyncio.run(task_runs_of(flow_run_id))
        if done(runs) or time.monotonic() > deadline:
            return runs
        time.sleep(0.2)


def _task_names(runs: list[Any]) -> list[str]:
    return sorted(run.name if run.name.startswith("select-chunk-") else run.name.rsplit("-", 1)[0] for run in runs)


def _expected_names(n_chunks: int, chunk_size: int) -> list[str]:
    chunks = [f"select-chunk-{start:06d}" for start in range(0, n_chunks * chunk_size, chunk_size)]
    return sorted([*FIXED_TASKS, *chunks])


def _run_and_check(source: Path, output: Path, chunk_size: int, n_articles: int, **runner: Any) -> None:
    state = select_content(
        input_path=str(source), output_path=str(output), chunk_size=chunk_size, return_state=True, **runner
    )
    assert state.is_completed(), state.message
    assert output.read_bytes() == expected_output(source)
    n_chunks = -(-n_articles // chunk_size)
    expected = _expected_names(n_chunks, chunk_size)
    runs = _wait_for_task_runs(
        state.state_details.flow_run_id,
        lambda rs: len(rs) == len(expected) and all(r.state and r.state.is_final() for r in rs),
    )
    assert _task_names(runs) == expected  # task runs grow with chunks, not articles
    assert all(run.state.is_completed() for run in runs)


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "aeb_extracted.json"
    path.write_bytes(GOLDEN_BATCH.read_bytes())
    return path


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "sample_extracted.json"
    path.write_bytes(SAMPLE_BATCH.read_bytes())
    return path


def _sample_size() -> int:
    return len(orjson.loads(SAMPLE_BATCH.read_bytes())["articles"])


def _run_in_process_and_check(source: Path, output: Path, chunk_size: int, n_articles: int) -> None:
    state = select_content(
        input_path=str(source),
        output_path=str(output),
        chunk_size=chunk_size,
        task_runner="in-process",
        return_state=True,
    )
    assert state.is_completed(), state.message
    assert output.read_bytes() == expected_output(source)
    n_chunks = -(-n_articles // min(chunk_size, 500))
    assert (
        state.result().read_as
        == f"in {n_chunks} chunk{'s' * (n_chunks > 1)} of articles, one after the other in this process"
    )
    expected = ["check-paths", "publish-artifacts", "select-batch"]
    runs = _wait_for_task_runs(
        state.state_details.flow_run_id,
        lambda rs: len(rs) == len(expected) and all(r.state and r.state.is_final() for r in rs),
    )
    assert _task_names(runs) == expected  # one task, whatever the number of chunks: they are read one at a time
    assert all(run.state.is_completed() for run in runs)


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
@pytest.mark.parametrize("chunk_size", [7, 1000], ids=["chunk-7", "chunk-large"])
def test_in_process_chunks_write_the_same_bytes(golden: Path, tmp_path: Path, chunk_size: int) -> None:
    _run_in_process_and_check(golden, tmp_path / "out.json", chunk_size, N_GOLDEN)


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_in_process_chunks_of_one_article(sample: Path, tmp_path: Path) -> None:
    _run_in_process_and_check(sample, tmp_path / "out.json", 1, _sample_size())


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_process_pool_writes_the_same_bytes(golden: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    state = select_content(input_path=str(golden), output_path=str(output), chunk_size=7, task_runner="process")
    assert output.read_bytes() == expected_output(golden)
    n_chunks = -(-N_GOLDEN // 7)
    assert state.read_as == f"in {n_chunks} chunks of articles, in parallel on the process task runner"
    assert leftover_files(tmp_path, {golden, output}) == []  # no part file is left


def _killed_after_the_first_chunk(job: ChunkJob) -> Any:
    """A worker's job that SIGKILLs its own process on every chunk but the first."""
    if job.start > 0:
        os.kill(os.getpid(), signal.SIGKILL)
    return select_job(job)


def test_a_killed_worker_process_fails_the_selection_and_leaves_nothing(golden: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    with plain_processes(_killed_after_the_first_chunk) as workers:
        with pytest.raises(BrokenProcessPool):
            select_file(golden, output, workers=workers.count(), chunk_articles=7,
                        map_jobs=partial(map_in_order, workers))  # fmt: skip
    assert leftover_files(tmp_path, {golden}) == []  # no output, no part file


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_local_dask_cluster_writes_the_same_bytes(golden: Path, tmp_path: Path) -> None:
    _run_and_check(golden, tmp_path / "out.json", 7, N_GOLDEN, task_runner="dask")
    assert leftover_files(tmp_path, {golden, tmp_path / "out.json"}) == []


# --- a Dask cluster of separate processes ---------------------------------------


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> Iterator[str]:
    """``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1; their address."""
    from distributed import Client
    from prefect.settings import PREFECT_API_URL

    scratch = tmp_path_factory.mktemp("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
            "DASK_TEMPORARY_DIRECTORY": str(scratch),
            "PREFECT_API_URL": str(PREFECT_API_URL.value()),  # the test harness's API
        }
    )
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    worker = [sys.executable, "-m", "distributed.cli.dask_worker"]
    loopback = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    logs = [open(scratch / name, "wb") for name in ("scheduler.log", "worker-1.log", "worker-2.log")]  # noqa: SIM115
    commands = [
        [*dask, "--port", str(port), *loopback],
        *[
            [*worker, address, "--nthreads", "1", "--no-nanny", "--local-directory", str(scratch / f"w{i}"), *loopback]
            for i in (1, 2)
        ],
    ]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command, log in zip(commands, logs):
            processes.append(subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
        with Client(address, timeout=WAIT_SECONDS) as client:
            client.wait_for_workers(2, timeout=WAIT_SECONDS)
            assert len(client.nthreads()) == 2
        yield address
    finally:
        # One at a time, the workers first: terminated all at once, one of the three took the whole 30 s to exit
        # (measured); this way all three are gone in about 1.5 s.
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in logs:
            log.close()


@pytest.mark.slow
@pytest.mark.usefixtures("no_data_root_env")
@pytest.mark.parametrize(
    ("batch", "chunk_size"),
    [("sample", 1), ("golden", 7), ("golden", 1000)],
    ids=["sample-chunk-1", "chunk-7", "chunk-large"],
)
def test_an_existing_dask_cluster_writes_the_same_bytes(
    dask_cluster: str, request: pytest.FixtureRequest, tmp_path: Path, batch: str, chunk_size: int
) -> None:
    source: Path = request.getfixturevalue(batch)
    n_articles = N_GOLDEN if batch == "golden" else _sample_size()
    _run_and_check(source, tmp_path / "out.json", chunk_size, n_articles, task_runner="dask", dask_address=dask_cluster)


@pytest.mark.slow
@pytest.mark.usefixtures("no_data_root_env")
def test_cli_run_on_an_existing_dask_cluster(dask_cluster: str, golden: Path, tmp_path: Path, capsys) -> None:
    output = tmp_path / "cli.json"
    argv = [str(golden), "-o", str(output), "--task-runner", "dask", "--dask-address", dask_cluster]
    assert main(["run", *argv, "--chunk-size", "50"]) == 0
    assert capsys.readouterr().out.startswith(f"selected {N_GOLDEN} articles")
    assert output.read_bytes() == expected_output(golden)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        pytest.param(["--task-runner", "dask", "--dask-address", "localhost"], "tcp://HOST:PORT", id="bad-address"),
        pytest.param(["--dask-address", "tcp://127.0.0.1:1", "--task-runner", "process"], "dask", id="mismatch"),
        pytest.param(["--chunk-size", "0"], "--chunk-size", id="zero-chunk"),
    ],
)
def test_cli_run_refuses_bad_runner_options_in_one_line(golden: Path, tmp_path: Path, capsys, extra, message) -> None:
    assert main(["run", str(golden), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("content-selection run: error: ") and message in err
    assert leftover_files(tmp_path, {golden}) == []


# --- directory mode -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
def test_select_directory_runs_batches_concurrently_with_chunks(batch_factory, tmp_path: Path) -> None:
    folder = tmp_path / "batches"
    sources = [batch_factory(name=f"{c}_extracted.json", directory=folder, n_articles=5) for c in "abcd"]
    bad = batch_factory(name="e_extracted.json", directory=folder, raw=b"[]")

    state = select_directory(directory=str(folder), max_concurrent_batches=3, chunk_size=2, return_state=True)

    assert state.is_failed() and "1 of 5 batch(es) failed" in state.message and str(bad) in state.message
    for source in sources:
        assert source.with_name(source.stem + "_selected.json").read_bytes() == expected_output(source)

    def batch_runs(runs: list[Any]) -> list[Any]:
        return [run for run in runs if run.name.startswith("select-batch-file")]

    runs = _wait_for_task_runs(
        state.state_details.flow_run_id,
        lambda rs: len(batch_runs(rs)) == 5 and all(r.state and r.state.is_final() for r in batch_runs(rs)),
    )
    assert len(batch_runs(runs)) == 5  # one task (and its select-content subflow) per stale batch


@pytest.mark.usefixtures("prefect_harness", "no_data_root_env")
@pytest.mark.parametrize(
    "parameters",
    [
        pytest.param({"max_concurrent_batches": 0}, id="no-concurrency"),
        pytest.param({"task_runner": "threads"}, id="unknown-runner"),
        pytest.param({"dask_address": "localhost:1"}, id="bad-address"),
        pytest.param({"chunk_size": -1}, id="negative-chunk"),  # 0: the Run form's "unset" (shell/params.py)
    ],
)
def test_runner_parameters_are_validated_before_the_run(tmp_path: Path, parameters: dict[str, Any]) -> None:
    for flow, base in ((select_directory, {"directory": str(tmp_path)}), (select_content, {"input_path": "x.json"})):
        if flow is select_content and "max_concurrent_batches" in parameters:
            continue
        state = flow(**base, **parameters, return_state=True)
        assert state.is_failed()
        assert "parameters" in (state.message or "").lower()
