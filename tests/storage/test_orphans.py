"""Staged files whose writer is gone are removed; a live writer's never (``selection_storage.atomic.remove_orphans``).

A writer is told by the lock it holds on its staged file from creation to rename; a part by the lock on
the staged file it belongs to. The writers here are real processes, killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from selection_storage import atomic
from selection_storage.atomic import ELSEWHERE_STALE_SECONDS, HOST_TAG, StagedFile, remove_orphans, temporary_name
from selection_storage.directory import remove_orphans_under

#: A writer that stages ``argv[1]``'s output, writes a little, says where, and waits to be killed.
WRITER = """
import sys
from pathlib import Path
from selection_storage.atomic import StagedFile
staged = StagedFile(Path(sys.argv[1]))
staged.write(b'{"partial": ')
print(staged.path, flush=True)
sys.stdin.read()
"""


def _writer(target: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    assert proc.returncode == -signal.SIGKILL


def test_a_live_writers_file_is_kept_and_removed_once_it_is_killed(tmp_path: Path) -> None:
    proc, staged = _writer(tmp_path / "b_selected.json")
    try:
        assert staged.exists()
        assert remove_orphans(tmp_path) == []  # alive: its lock is held
        assert staged.exists()
    finally:
        _kill(proc)
    assert remove_orphans(tmp_path) == [staged]
    assert list(tmp_path.iterdir()) == []


def test_parts_live_as_long_as_their_owner(tmp_path: Path) -> None:
    target = tmp_path / "b_selected.json"
    proc, owner = _writer(target)
    token = owner.name.split(".")[-2]
    pid = int(owner.name.split(".")[-3].split("-")[1])
    part = owner.with_name(owner.name.replace(f".{token}.", f".{token}-00000003."))
    part.write_bytes(b"a finished part: closed, unlocked")
    try:
        assert remove_orphans(tmp_path) == []
    finally:
        _kill(proc)
    assert sorted(remove_orphans(tmp_path)) == sorted([owner, part]) and pid == proc.pid
    assert list(tmp_path.iterdir()) == []


def test_a_part_being_written_is_kept_even_without_its_owner(tmp_path: Path) -> None:
    target = tmp_path / "b_selected.json"
    part = StagedFile(target, temporary_name(target, "ab" * 8, 1), durable=False)  # its owner's file never existed
    part.write(b"half")
    assert remove_orphans(tmp_path) == []
    part.finish()
    part.release()
    assert remove_orphans(tmp_path) == [part.path]


def test_another_machines_file_waits_until_it_is_stale(tmp_path: Path) -> None:
    elsewhere = "0" * 8 if HOST_TAG != "0" * 8 else "1" * 8
    name = tmp_path / f".b_selected.json.{elsewhere}-123.{'cd' * 8}.cs-tmp"
    name.write_bytes(b"partial")
    written = name.stat().st_mtime
    assert remove_orphans(tmp_path, now=written + ELSEWHERE_STALE_SECONDS - 1) == []
    assert remove_orphans(tmp_path, now=written + ELSEWHERE_STALE_SECONDS + 1) == [name]


def test_lookalikes_and_other_files_are_never_touched(tmp_path: Path) -> None:
    keep = [
        tmp_path / ".b_selected.json.not-ours.cs-tmp",
        tmp_path / f".b_selected.json.{HOST_TAG}-1.XYZ.cs-tmp",
        tmp_path / "b_selected.json",
        tmp_path / f"b_selected.json.{HOST_TAG}-1.{'ab' * 8}",
    ]
    for path in keep:
        path.write_bytes(b"x")
    assert remove_orphans(tmp_path) == []
    assert sorted(tmp_path.iterdir()) == sorted(keep)
    assert remove_orphans(tmp_path / "missing") == []


def test_a_sweeper_that_wins_the_creation_race_makes_the_writer_start_again(tmp_path: Path, mocker) -> None:
    """Between the writer's create and its lock, a sweeper may take the new file for an orphan and remove it:
    the writer notices (its descriptor no longer names the path) and creates it again."""
    real_flock = atomic.fcntl.flock
    swept: list[Path] = []
    raced: list[bool] = []

    def sweep_first(fd: int, op: int) -> None:
        if not raced:
            raced.append(True)
            swept.extend(remove_orphans(tmp_path))  # the file exists, nobody holds its lock yet
        real_flock(fd, op)

    mocker.patch.object(atomic.fcntl, "flock", side_effect=sweep_first)
    target = tmp_path / "b_selected.json"
    staged = StagedFile(target)
    mocker.stopall()
    assert len(swept) == 1 and swept[0] == staged.path
    staged.write_all([b"{}"])
    assert remove_orphans(tmp_path) == []  # locked again, after the second creation
    staged.commit()
    assert target.read_bytes() == b"{}" and list(tmp_path.iterdir()) == [target]


def test_the_scheduled_scan_removes_orphans_in_every_folder_it_walks(tmp_path: Path) -> None:
    deep = tmp_path / "2024" / "05"
    deep.mkdir(parents=True)
    hidden = tmp_path / ".cache"
    hidden.mkdir()
    orphans = [folder / f".b_selected.json.{HOST_TAG}-1.{'ef' * 8}.cs-tmp" for folder in (tmp_path, deep, hidden)]
    for path in orphans:
        path.write_bytes(b"partial")
    proc, live = _writer(deep / "c_selected.json")
    try:
        assert remove_orphans_under(tmp_path) == orphans[:2]  # hidden folders are not walked
        assert live.exists() and orphans[2].exists()
    finally:
        _kill(proc)
    assert remove_orphans_under(tmp_path) == [live]


@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_a_killed_select_leaves_a_file_the_next_run_in_that_folder_removes(tmp_path: Path, delay: float) -> None:
    """SIGKILL ``select`` while it holds its staged output; a run on *another* batch of the folder removes it."""
    from tests.support.faultkit import SELECT_CMD, child_env, temporaries

    source = Path(__file__).parents[1] / "data" / "aeb_batch_extracted.json"
    first, second = tmp_path / "a_extracted.json", tmp_path / "b_extracted.json"
    first.write_bytes(source.read_bytes())
    second.write_bytes(source.read_bytes())
    for _attempt in range(10):
        proc = subprocess.Popen([*SELECT_CMD, str(first)], env=child_env(), stdout=subprocess.DEVNULL)
        while proc.poll() is None and not temporaries(tmp_path):
            pass
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGSTOP)
        left = temporaries(tmp_path)
        proc.kill()
        proc.wait()
        if left and proc.returncode == -signal.SIGKILL and temporaries(tmp_path):
            break
    else:
        pytest.skip("ten runs finished their write between two polls; nothing to clean")
    done = subprocess.run([*SELECT_CMD, str(second)], env=child_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert temporaries(tmp_path) == []
