"""SIGKILL ``content-selection select`` at random moments; nothing may be lost or partial.

A real subprocess (``python -m selection_cli.main select``) works on a synthetic
batch of a few MB while the test kills it with SIGKILL: at a time drawn
uniformly over the length of an unkilled run (so kills land while it starts,
reads, parses, selects and writes), and, because the write itself takes only
milliseconds of a run, also right after its temporary file appears. The seed
is fixed, so the schedule is the same on every run; which phase a kill meets
still depends on the machine's speed, and the invariants hold for all of them. A kill counts only if it
met a running process (SIGKILL status); runs that finished first are checked too.

After every kill: the input's SHA-256 is unchanged; the target holds nothing,
the previous complete output, or the complete new output (compared byte for
byte with a reference computed once), never a partial file; the next run
succeeds, removes the temporary file the killed run left, and leaves every
unrelated file alone. ``scripts/crash_kill_loop.py`` runs the same trials 200 times.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from selection_storage.atomic import HOST_TAG
from tests.support.faultkit import SELECT_CMD, TMP_NAME, CrashRig, child_env, kill_delays, run_select, temporaries

#: About 3 MB of articles: long enough for kills to spread over every phase, short
#: enough for two dozen kills and their recovery runs to take about half a minute.
BATCH_BYTES = 3_000_000
SEED = 20240506
#: Every fourth trial kills right after the temporary file appears; the others at
#: a uniform time over the length of an unkilled run.
WRITE_EVERY = 4
#: Trials go on until this many processes were really killed (a run that
#: finishes before its kill time is checked but not counted) ...
KILLS = 22
#: ... within this many trials at most.
MAX_TRIALS = 40
STATES = ("absent", "previous", "current")


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> CrashRig:
    return CrashRig(tmp_path_factory.mktemp("crash"), BATCH_BYTES, seed=SEED)


@pytest.mark.slow
def test_sigkill_at_random_moments_never_leaves_a_partial_output(rig: CrashRig) -> None:
    rng = random.Random(SEED)
    duration = rig.measure(runs=3)
    kills = survived = trials = 0
    phases: Counter[str] = Counter()
    failures: list[str] = []
    while kills < KILLS and trials < MAX_TRIALS:
        at_write = trials % WRITE_EVERY == WRITE_EVERY - 1
        delay = rng.uniform(0.0, 0.004) if at_write else kill_delays(rng, 1, duration)[0]
        state = STATES[trials % len(STATES)]
        outcome = rig.kill_trial(state, delay, at_write=at_write)
        trials += 1
        kills += outcome.killed
        survived += outcome.killed and not outcome.problems
        phases[outcome.phase] += 1
        failures += [
            f"trial {trials} (target {state}, kill at {delay:.3f}s{' after the write began' if at_write else ''}): {p}"
            for p in outcome.problems
        ]

    print(f"\ncrash safety: {survived} kills survived of {kills} tried ({trials} trials); phases {dict(phases)}")
    assert not failures, "\n".join(failures)
    assert kills >= 20, f"only {kills} of {trials} trials killed a running process; phases {dict(phases)}"


def test_a_killed_writer_leaves_a_temporary_file_that_the_next_run_removes(rig: CrashRig) -> None:
    """The cleanup itself, made certain: stop the command inside its write (SIGSTOP
    as soon as the temporary file appears), SIGKILL it, then run again."""
    for _attempt in range(5):
        rig.prepare("previous")
        proc = subprocess.Popen(
            [*SELECT_CMD, str(rig.input)], env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            while proc.poll() is None and not temporaries(rig.dir):
                pass
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGSTOP)
            caught = temporaries(rig.dir)
        finally:
            proc.kill()
            proc.wait()
        if caught:
            break
    else:
        pytest.skip("five runs finished their write between two polls; nothing to clean")
    assert proc.returncode == -signal.SIGKILL
    assert rig.target.read_bytes() == rig.previous, "the previous output must stay in place until the rename"
    assert TMP_NAME.match(caught[0])["pid"] == str(proc.pid), "the temporary file is named after its writer's pid"

    assert rig.check_recovery() == []
    assert not (rig.dir / caught[0]).exists()


def test_temporary_files_of_live_writers_and_lookalikes_are_kept(rig: CrashRig, tmp_path: Path) -> None:
    """The next run removes every staged file of its directory whose writer is gone (its lock is free), for any
    target; not one a live writer holds locked (it may still be writing), nor lookalikes."""
    rig.prepare("absent")
    live = f".{rig.target.name}.{HOST_TAG}-{os.getpid()}.{'ab' * 8}.cs-tmp"
    other_target = f".other_selected.json.{HOST_TAG}-{2**22 + 12345}.{'cd' * 8}.cs-tmp"
    wrong_hex = f".{rig.target.name}.{HOST_TAG}-{2**22 + 12345}.XYZ.cs-tmp"
    dead = f".{rig.target.name}.{HOST_TAG}-{os.getpid()}.{'ef' * 8}.cs-tmp"  # this pid, but nobody holds it
    for name in (live, other_target, wrong_hex, dead):
        (rig.dir / name).write_bytes(b"partial")
    holder = os.open(rig.dir / live, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # what a live writer holds from creation to rename
    try:
        proc = run_select([rig.input])
        assert proc.returncode == 0, proc.stderr
        assert (rig.dir / live).exists()
        assert (rig.dir / wrong_hex).exists()
        assert not (rig.dir / other_target).exists()
        assert not (rig.dir / dead).exists()
        assert rig.target.read_bytes() == rig.reference
    finally:
        os.close(holder)
        for name in (live, other_target, wrong_hex, dead):
            (rig.dir / name).unlink(missing_ok=True)
