"""Faults inside ``select-content`` flow runs: retried when a retry can help, never anything lost.

Complements ``test_prefect_flow.py`` (which replaces whole task functions) by
breaking the system calls underneath, as ``test_disk_errors.py`` does for the
command:

* EIO on the first ``os.write`` of the output, or on the first ``open()`` of
  the input: the task is retried and the run completes with the exact output;
* ENOSPC (disk full) and EACCES at the write: the run fails at once (one task
  run), the input is intact, the previous output untouched, no temporary file;
* paths that leave the data root (output, report, a symlinked directory, a
  dangling symlink, ``..``) are refused before the batch is read (the read is
  spied on) and nothing is written anywhere;
* SIGKILL of a flow run (a real ``python -m selection_cli.main run`` process against the
  session's Prefect API), mostly while it writes: same invariants as the
  command's (``test_crash_safety.py``). Each flow process pays for importing
  Prefect, so there are only a few of these; the many kills are the command's,
  whose write path (``selection_storage.atomic.write_atomic``) the flow shares. The
  chunked path (``--chunk-size``: parts written beside the output, then joined)
  is killed too, mostly while its parts are being written.

Runs use the session-scoped ``prefect_harness`` of ``tests/support/prefect_fixtures.py``.
"""

from __future__ import annotations

import asyncio
import errno
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import selection_storage.atomic
import selection_storage.stores.disk
from content_selection.flows.select_content import select_content
from selection_core.errors import OutputPathError, UnsafePathError, WriteError
from tests.support.faultkit import TMP_NAME, CrashRig, child_env, listing, synthetic_batch, temporaries
from tests.support.prefect_fixtures import expected_output, task_runs_of

pytestmark = pytest.mark.usefixtures("prefect_harness")

#: Upper bound of the wait for task-run states to reach the API (not a timing assertion).
API_CATCH_UP_SECONDS = 60
BATCH = synthetic_batch(40_000, seed=9)
PREVIOUS = b'{\n  "articles": [],\n  "previous": true\n}\n'


def run_counts(flow_run_id: UUID, expected: set[str]) -> dict[str, int]:
    """``{task name: run_count}`` once every expected task run is final (bounded wait)."""
    deadline = time.monotonic() + API_CATCH_UP_SECONDS
    while True:
        runs = {run.name.rsplit("-", 1)[0]: run for run in asyncio.run(task_runs_of(flow_run_id))}
        final = expected <= set(runs) and all(r.state and r.state.is_final() for r in runs.values())
        if final or time.monotonic() > deadline:
            return {name: run.run_count for name, run in runs.items()}
        time.sleep(0.2)


class WriteFault:
    """``os.write`` on our temporary files fails with ``err`` the first ``times`` times."""

    def __init__(self, mocker: Any, err: int, times: int) -> None:
        self.err, self.left, self.hits = err, times, 0
        self.real_open, self.real_write = os.open, os.write
        self.fds: set[int] = set()
        mocker.patch.object(os, "open", side_effect=self._open)
        mocker.patch.object(os, "write", side_effect=self._write)

    def _open(self, path: Any, flags: int, mode: int = 0o777, *a: Any, **k: Any) -> int:
        fd = self.real_open(path, flags, mode, *a, **k)
        if TMP_NAME.match(Path(os.fsdecode(path)).name):
            self.fds.add(fd)
        return fd

    def _write(self, fd: int, data: Any) -> int:
        if fd in self.fds and self.left > 0:
            self.left -= 1
            self.hits += 1
            raise OSError(self.err, os.strerror(self.err))
        return int(self.real_write(fd, data))


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    path = tmp_path / "b_extracted.json"
    path.write_bytes(BATCH)
    return path


def test_eio_at_the_write_system_call_is_retried_and_the_run_completes(batch: Path, mocker: Any) -> None:
    fault = WriteFault(mocker, errno.EIO, times=1)
    state = select_content(input_path=str(batch), return_state=True)
    mocker.stopall()
    assert state.is_completed(), state.message
    assert fault.hits == 1
    assert (batch.parent / "b_extracted_selected.json").read_bytes() == expected_output(batch)
    assert temporaries(batch.parent) == []
    assert batch.read_bytes() == BATCH
    assert run_counts(state.state_details.flow_run_id, {"select-batch"})["select-batch"] == 2


def test_eio_at_the_read_is_retried_and_the_run_completes(batch: Path, mocker: Any) -> None:
    real_open = open
    failures = [OSError(errno.EIO, "Input/output error", str(batch))]

    def flaky_open(file: Any, *a: Any, **k: Any) -> Any:
        if Path(file) == batch and failures:
            raise failures.pop()
        return real_open(file, *a, **k)

    mocker.patch("selection_storage.files.open", side_effect=flaky_open, create=True)
    state = select_content(input_path=str(batch), return_state=True)
    mocker.stopall()
    assert state.is_completed(), state.message
    assert not failures
    assert (batch.parent / "b_extracted_selected.json").read_bytes() == expected_output(batch)
    assert run_counts(state.state_details.flow_run_id, {"select-batch"})["select-batch"] == 2


@pytest.mark.parametrize(
    ("err", "error_type", "fragment"),
    [
        (errno.ENOSPC, WriteError, "no space left on the device"),
        (errno.EACCES, OutputPathError, "cannot write here"),
    ],
    ids=["ENOSPC", "EACCES"],
)
@pytest.mark.parametrize("previous", [None, PREVIOUS], ids=["no-previous-output", "previous-output"])
def test_a_write_that_cannot_succeed_fails_at_once_and_leaves_everything_as_it_was(
    err: int, error_type: type[Exception], fragment: str, previous: bytes | None, batch: Path, mocker: Any
) -> None:
    target = batch.parent / "b_extracted_selected.json"
    if previous is not None:
        target.write_bytes(previous)
    before = listing(batch.parent)
    fault = WriteFault(mocker, err, times=10)
    state = select_content(input_path=str(batch), return_state=True)
    mocker.stopall()
    assert state.is_failed()
    with pytest.raises(error_type, match=fragment):
        state.result()
    assert fault.hits == 1, "a write that cannot succeed must not be retried"
    assert listing(batch.parent) == before, "input, previous output and directory must be unchanged"
    counts = run_counts(state.state_details.flow_run_id, {"check-paths", "select-batch"})
    assert counts["select-batch"] == 1
    assert "publish-artifacts" not in counts


# --------------------------------------------------------------------------- the data root


@pytest.fixture
def rooted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, outside, batch inside the root)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "day1").mkdir(parents=True)
    outside.mkdir()
    batch = root / "day1" / "b_extracted.json"
    batch.write_bytes(BATCH)
    (outside / "secret.json").write_bytes(b'{"articles": []}')
    return root, outside, batch


def _escape_cases() -> list[Any]:
    def case(name: str, build: Callable[[Path, Path, Path], dict[str, str]]) -> Any:
        return pytest.param(build, id=name)

    def link(at: Path, to: Path) -> Path:
        at.symlink_to(to)
        return at

    return [
        case("output-outside", lambda r, o, b: {"input_path": str(b), "output_path": str(o / "out.json")}),
        case("output-dotdot", lambda r, o, b: {"input_path": str(b), "output_path": f"{r}/day1/../../outside/o.json"}),
        case(
            "output-relative-dotdot",
            lambda r, o, b: {"input_path": "day1/b_extracted.json", "output_path": "../o.json"},
        ),
        case("report-outside", lambda r, o, b: {"input_path": str(b), "report_path": str(o / "r.jsonl")}),
        case(
            "output-symlink-out",
            lambda r, o, b: {"input_path": str(b), "output_path": str(link(r / "day1" / "o.json", o / "o.json"))},
        ),
        case(
            "default-output-is-a-symlink-out",
            lambda r, o, b: {
                "input_path": str(b),
                "_": str(link(r / "day1" / "b_extracted_selected.json", o / "x.json")),
            },
        ),
        case(
            "input-through-a-symlinked-directory",
            lambda r, o, b: {"input_path": str(link(r / "d", o) / "secret.json")},
        ),
        case("input-dotdot", lambda r, o, b: {"input_path": "day1/../../outside/secret.json"}),
        case(
            "input-dangling-symlink-out",
            lambda r, o, b: {"input_path": str(link(r / "day1" / "gone_extracted.json", o / "gone.json"))},
        ),
    ]


@pytest.mark.parametrize("build", _escape_cases())
def test_paths_that_leave_the_data_root_are_refused_before_anything_is_read_or_written(
    build: Callable[[Path, Path, Path], dict[str, str]], rooted: tuple[Path, Path, Path], mocker: Any
) -> None:
    root, outside, batch = rooted
    params = {k: v for k, v in build(root, outside, batch).items() if k != "_"}
    before = {d: listing(d) for d in (root, root / "day1", outside)}
    read, write = _read_and_write_spies(mocker)
    state = select_content(**params, data_root=str(root), require_data_root=True, return_state=True)
    assert state.is_failed()
    with pytest.raises(UnsafePathError, match="outside the data root"):
        state.result()
    assert read.call_count == 0 and write.call_count == 0
    assert {d: listing(d) for d in (root, root / "day1", outside)} == before


def _read_and_write_spies(mocker: Any) -> tuple[Any, Any]:
    """Spies on where every run reads its input (the first pass opens it) and stages what it writes."""
    return mocker.spy(selection_storage.stores.disk, "open_input"), mocker.spy(
        selection_storage.atomic.StagedFile, "__init__"
    )


def test_the_spies_see_a_run_s_reads_and_writes(rooted: tuple[Path, Path, Path], mocker: Any) -> None:
    root, _outside, batch = rooted  # the control of the test above: its spies are where the reading and writing are
    read, write = _read_and_write_spies(mocker)
    state = select_content(input_path=str(batch), data_root=str(root), require_data_root=True, return_state=True)
    assert state.is_completed(), state.message
    assert read.call_count >= 1 and write.call_count >= 1


def test_an_output_hard_linked_to_a_file_outside_the_root_never_changes_that_file(
    rooted: tuple[Path, Path, Path],
) -> None:
    """A hard link cannot be told from a file; the atomic rename replaces the
    link's name with a new file, so the outside file keeps its bytes."""
    root, outside, batch = rooted
    os.link(outside / "secret.json", root / "day1" / "b_extracted_selected.json")
    select_content(input_path=str(batch), data_root=str(root), require_data_root=True)
    assert (outside / "secret.json").read_bytes() == b'{"articles": []}'
    assert (root / "day1" / "b_extracted_selected.json").read_bytes() == expected_output(batch)


# --------------------------------------------------------------------------- SIGKILL of a flow run

FLOW_CMD = ("-m", "selection_cli.main", "run")
#: Flow runs really killed (most of them right after the temporary file appears) ...
FLOW_KILLS = 3
#: ... within this many trials at most.
FLOW_MAX_TRIALS = 6


def _flow_rig(workdir: Path, *options: str) -> CrashRig:
    from prefect.settings import PREFECT_API_URL

    env = {**child_env(), "PREFECT_API_URL": str(PREFECT_API_URL.value())}

    def recover(inp: Path) -> str | None:  # the next run: a flow run, in this process
        state = select_content(input_path=str(inp), return_state=True)
        return None if state.is_completed() else str(state.message)

    return CrashRig(
        workdir,
        1_000_000,
        seed=21,
        command=(sys.executable, *FLOW_CMD, *options),
        env=env,
        recover=recover,
    )


@pytest.fixture(scope="module")
def flow_rig(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> CrashRig:
    return _flow_rig(tmp_path_factory.mktemp("flow-kill"))


@pytest.fixture(scope="module")
def chunked_flow_rig(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> CrashRig:
    return _flow_rig(tmp_path_factory.mktemp("chunked-flow-kill"), "--chunk-size", "40")


@pytest.mark.slow
@pytest.mark.parametrize("rig_name", ["flow_rig", "chunked_flow_rig"], ids=["in-process", "chunked"])
def test_sigkill_of_flow_runs_never_leaves_a_partial_output(rig_name: str, request: pytest.FixtureRequest) -> None:
    flow_rig: CrashRig = request.getfixturevalue(rig_name)
    rng = random.Random(7)
    duration = flow_rig.measure()
    kills = survived = trials = 0
    phases: Counter[str] = Counter()
    failures = []
    while kills < FLOW_KILLS and trials < FLOW_MAX_TRIALS:
        at_write = trials % 3 != 0  # one uniform kill in three
        delay = rng.uniform(0.0, 0.004) if at_write else rng.uniform(0.0, duration)
        outcome = flow_rig.kill_trial(("absent", "previous", "current")[trials % 3], delay, at_write=at_write)
        trials += 1
        kills += outcome.killed
        survived += outcome.killed and not outcome.problems
        phases[outcome.phase] += 1
        failures += [f"trial {trials} (delay {delay:.3f}s, at_write={at_write}): {p}" for p in outcome.problems]
    print(f"\nflow kills ({rig_name}): {survived} survived of {kills} tried ({trials} trials); phases {dict(phases)}")
    assert not failures, "\n".join(failures)
    assert kills >= FLOW_KILLS - 1, f"only {kills} of {trials} flow runs were killed while running"
