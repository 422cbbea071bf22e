"""Two ``content-selection select`` processes writing the same output at the same time.

Two batches of the same size go to one ``--output``, in three schedules: a
plain race, and two where SIGSTOP/SIGCONT hold the first writer inside its
write so that the overlap is certain rather than lucky. Both runs must succeed; afterwards the target holds
exactly one of the two complete outputs (byte-compared with references
computed alone) and no temporary file is left. Meanwhile the test reads the
target continuously: every read sees nothing yet or one of the two complete
outputs, never a mixture or a partial file.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from selection_storage.atomic import _held
from tests.support.faultkit import SELECT_CMD, child_env, run_select, synthetic_batch, temporaries

SIZE = 600_000


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[bytes]]:
    d = tmp_path_factory.mktemp("concurrent")
    inputs, references = [], []
    for seed in (11, 12):
        inp = d / f"batch{seed}_extracted.json"
        inp.write_bytes(synthetic_batch(SIZE, seed=seed))
        ref = d / f"reference{seed}.json"
        assert run_select([inp, "--output", ref]).returncode == 0
        inputs.append(inp)
        references.append(ref.read_bytes())
        ref.unlink()
    assert references[0] != references[1]
    return d, inputs, references


def _wait_for(predicate: Callable[[], bool], procs: list[subprocess.Popen[bytes]]) -> bool:
    while not predicate():
        if all(p.poll() is not None for p in procs):
            return False
    return True


@pytest.mark.parametrize("schedule", ["race", "first-paused-in-write", "both-in-write"])
def test_two_writers_leave_one_complete_output(schedule: str, pair: tuple[Path, list[Path], list[bytes]]) -> None:
    """``race``: both start together. ``first-paused-in-write``: the first is
    stopped (SIGSTOP) as soon as its temporary file exists and resumed after the
    second has finished, so the second's clean-up meets a live writer's file.
    ``both-in-write``: the first is stopped in its write until the second's
    temporary file exists too, so that both write at once."""
    d, inputs, references = pair
    target = d / "shared_selected.json"
    target.unlink(missing_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    for inp in inputs:
        procs.append(
            subprocess.Popen(
                [*SELECT_CMD, str(inp), "--output", str(target)],
                env=child_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
        if schedule == "race":
            continue
        # Pause the first inside its write: once its staged file is locked. (Between its creation and its lock, a
        # sweeper takes it for an orphan and the writer creates it again: tests/storage/test_orphans.py.)
        if len(procs) == 1 and _wait_for(lambda: any(_held(d / n) for n in temporaries(d)), procs):
            procs[0].send_signal(signal.SIGSTOP)  # (a no-op if it has already exited)
    first = procs[0]
    # Stopped before its rename (else the schedule became a plain race):
    paused_in_write = any(f"-{first.pid}." in name for name in temporaries(d))
    if schedule == "first-paused-in-write":
        procs[1].wait()
        if paused_in_write:
            assert any(f"-{first.pid}." in name for name in temporaries(d)), (
                "a live writer's temporary file was removed"
            )
        first.send_signal(signal.SIGCONT)
    elif schedule == "both-in-write":
        _wait_for(lambda: len(temporaries(d)) == 2 or procs[1].poll() is not None, procs[1:])
        both = len(temporaries(d)) == 2
        first.send_signal(signal.SIGCONT)
        print(f"both temporary files at once: {both}")
    seen = {"absent": 0, "complete": 0}
    partial: list[int] = []
    while any(p.poll() is None for p in procs):
        time.sleep(0.001)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            seen["absent"] += 1
            continue
        if data in references:
            seen["complete"] += 1
        else:
            partial.append(len(data))
    errors = [p.stderr.read().decode() if p.stderr else "" for p in procs]
    for p in procs:
        p.wait()
        if p.stderr:
            p.stderr.close()
    assert [p.returncode for p in procs] == [0, 0], errors
    assert not partial, f"a reader saw {len(partial)} incomplete outputs (sizes {partial[:5]})"
    final = target.read_bytes()
    assert final in references
    if schedule == "first-paused-in-write" and paused_in_write:
        assert final == references[0], "the last rename wins: the resumed first writer"
    assert temporaries(d) == []
    assert sorted(p.name for p in d.iterdir()) == sorted([*(i.name for i in inputs), target.name])
