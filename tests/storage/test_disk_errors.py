"""Disk faults while writing: a clear error, input intact, no output, no temporary file.

Two ways to break the disk:

* **Injected** with pytest-mock at the exact system calls of
  ``selection_storage.atomic.write_atomic`` (``os.open``, ``os.write``, ``os.fsync``,
  ``os.close``, ``os.replace``), and at the ``open()`` of ``open_input``. The
  fault hits only the calls on our temporary file (or input), so everything
  else the interpreter does keeps working; each test checks that it was hit.
* **For real** on a tiny tmpfs mounted by the test (root only; skipped with the
  reason elsewhere): an output larger than the file system (ENOSPC in the
  middle of ``os.write``), a file system without a free inode (ENOSPC at
  ``os.open``), and a read-only mount.

Every case runs the command's entry point and checks: the exit status of
``selection_core.errors`` (74 for a machine error, 65 for a refused place),
one line on stderr naming the target and the fix, the input's bytes unchanged,
the target absent or still holding the previous output, and no temporary file.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from selection_cli.main import main
from tests.support.faultkit import (
    EXIT_INVALID_INPUT,
    EXIT_IO_ERROR,
    TMP_NAME,
    can_mount,
    listing,
    run_select,
    stderr_lines,
    synthetic_batch,
    temporaries,
    tmpfs,
)

BATCH = synthetic_batch(60_000, seed=3)
PREVIOUS = b'{\n  "articles": [],\n  "previous": true\n}\n'

#: errno -> (exit status, fragment of the message)
EXPECTED = {
    errno.ENOSPC: (EXIT_IO_ERROR, "no space left on the device; free some space and run again (nothing was written)"),
    errno.EDQUOT: (EXIT_IO_ERROR, "disk quota exceeded"),
    errno.EIO: (EXIT_IO_ERROR, "write failed (Input/output error); nothing was written, retry"),
    errno.EACCES: (EXIT_INVALID_INPUT, "cannot write here (Permission denied); choose another --output"),
    errno.EPERM: (EXIT_INVALID_INPUT, "cannot write here (Operation not permitted); choose another --output"),
    errno.EROFS: (EXIT_INVALID_INPUT, "cannot write here (Read-only file system); choose another --output"),
}
CALLS = ("open", "write", "fsync", "close", "replace")


class DiskFault:
    """Make one system call fail with ``err`` when it touches our temporary file.

    ``write`` fails on its second call, after a first partial write of 1000
    bytes, as a disk that fills up in the middle of the file does.
    """

    def __init__(self, mocker: Any, call: str, err: int) -> None:
        self.call, self.err, self.hits = call, err, 0
        self.tmp_fds: set[int] = set()
        self.writes = 0
        self._real = {name: getattr(os, name) for name in CALLS}
        for name in CALLS:
            mocker.patch.object(os, name, side_effect=getattr(self, f"_{name}"), autospec=False)

    def _fail(self, name: str) -> bool:
        if name == self.call:
            self.hits += 1
            return True
        return False

    def _raise(self) -> None:
        raise OSError(self.err, os.strerror(self.err))

    def _open(self, path: Any, flags: int, mode: int = 0o777, *a: Any, **k: Any) -> int:
        ours = bool(TMP_NAME.match(Path(os.fsdecode(path)).name)) and bool(flags & (os.O_WRONLY | os.O_RDWR))
        if ours and self._fail("open"):
            self._raise()
        fd = self._real["open"](path, flags, mode, *a, **k)
        if ours:
            self.tmp_fds.add(fd)
        return fd

    def _write(self, fd: int, data: Any) -> int:
        if fd in self.tmp_fds:
            self.writes += 1
            if self.writes == 1 and self.call == "write":
                return int(self._real["write"](fd, bytes(data[:1000])))
            if self._fail("write"):
                self._raise()
        return int(self._real["write"](fd, data))

    def _fsync(self, fd: int) -> None:
        if fd in self.tmp_fds and self._fail("fsync"):
            self._raise()
        self._real["fsync"](fd)

    def _close(self, fd: int) -> None:
        ours = fd in self.tmp_fds
        self.tmp_fds.discard(fd)
        self._real["close"](fd)  # the descriptor is released either way, as on Linux
        if ours and self._fail("close"):
            self._raise()

    def _replace(self, src: Any, dst: Any, *a: Any, **k: Any) -> None:
        if TMP_NAME.match(Path(os.fsdecode(src)).name) and self._fail("replace"):
            self._raise()
        self._real["replace"](src, dst, *a, **k)


@pytest.fixture
def batch_dir(tmp_path: Path) -> Path:
    (tmp_path / "in_extracted.json").write_bytes(BATCH)
    (tmp_path / "unrelated.txt").write_bytes(b"keep\n")
    return tmp_path


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(["select", *args])
    out, err = capsys.readouterr()
    return status, out, err


def assert_clean_failure(
    status: int, err: str, expected_status: int, fragment: str, target: Path, previous: bytes | None
) -> None:
    lines = stderr_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert status == expected_status, lines[0]
    assert lines[0].startswith(f"content-selection: error: {target}: "), lines[0]
    assert fragment in lines[0], lines[0]
    if previous is None:
        assert not target.exists(), "no output may appear"
    else:
        assert target.read_bytes() == previous, "the previous output must be untouched"
    assert temporaries(target.parent) == []


@pytest.mark.parametrize("previous", [None, PREVIOUS], ids=["no-previous-output", "previous-output"])
@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO, errno.EACCES, errno.EPERM], ids=errno.errorcode.get)
@pytest.mark.parametrize("call", CALLS)
def test_injected_write_fault(
    call: str, err: int, previous: bytes | None, batch_dir: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    inp, target = batch_dir / "in_extracted.json", batch_dir / "in_extracted_selected.json"
    if previous is not None:
        target.write_bytes(previous)
    before = listing(batch_dir)
    fault = DiskFault(mocker, call, err)
    status, out, stderr = run_main([str(inp)], capsys)
    mocker.stopall()
    assert fault.hits == 1, f"the fault at os.{call} was never hit"
    assert_clean_failure(status, stderr, *EXPECTED[err], target, previous)
    assert out == ""
    assert listing(batch_dir) == before, "the directory must be exactly as before (input included)"


@pytest.mark.parametrize("err", [errno.EDQUOT, errno.EROFS], ids=errno.errorcode.get)
def test_injected_quota_and_read_only_faults(
    err: int, batch_dir: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    inp, target = batch_dir / "in_extracted.json", batch_dir / "in_extracted_selected.json"
    before = listing(batch_dir)
    DiskFault(mocker, "write", err)
    status, _, stderr = run_main([str(inp)], capsys)
    mocker.stopall()
    assert_clean_failure(status, stderr, *EXPECTED[err], target, None)
    assert listing(batch_dir) == before


def test_short_writes_still_give_the_complete_output(
    batch_dir: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``os.write`` may write less than asked; every byte must still arrive."""
    real_write = os.write
    mocker.patch.object(os, "write", side_effect=lambda fd, data: real_write(fd, bytes(data[:777])))
    status, _, stderr = run_main([str(batch_dir / "in_extracted.json")], capsys)
    mocker.stopall()
    assert status == 0, stderr
    reference = batch_dir / "reference.json"
    assert run_select([batch_dir / "in_extracted.json", "--output", reference]).returncode == 0
    assert (batch_dir / "in_extracted_selected.json").read_bytes() == reference.read_bytes()


def test_a_failed_directory_fsync_after_the_rename_keeps_the_complete_output(
    batch_dir: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """After ``os.replace`` the new output is in place; a file system that refuses
    to fsync a directory must not turn that into a failure."""
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        real_fsync(fd)

    mocker.patch.object(os, "fsync", side_effect=fsync)
    status, _, stderr = run_main([str(batch_dir / "in_extracted.json")], capsys)
    mocker.stopall()
    assert status == 0, stderr
    assert (batch_dir / "in_extracted_selected.json").read_bytes().endswith(b"}\n")
    assert temporaries(batch_dir) == []


@pytest.mark.parametrize(
    ("err", "status", "fragment"),
    [
        (errno.EIO, EXIT_IO_ERROR, "read failed (Input/output error); retry later"),
        (errno.EACCES, EXIT_INVALID_INPUT, "cannot be read (permission denied); make it readable by this user"),
        (errno.ENAMETOOLONG, EXIT_INVALID_INPUT, "cannot be read (File name too long); check the path"),
    ],
    ids=["EIO", "EACCES", "ENAMETOOLONG"],
)
def test_injected_read_fault(
    err: int, status: int, fragment: str, batch_dir: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    inp = batch_dir / "in_extracted.json"
    before = listing(batch_dir)
    exc = PermissionError if err == errno.EACCES else OSError
    mocker.patch("selection_storage.files.open", side_effect=exc(err, os.strerror(err)), create=True)
    got, out, stderr = run_main([str(inp)], capsys)
    mocker.stopall()
    lines = stderr_lines(stderr)
    assert len(lines) == 1 and got == status, stderr
    assert lines[0].startswith(f"content-selection: error: {inp}: ") and fragment in lines[0], lines[0]
    assert out == ""
    assert listing(batch_dir) == before


def test_a_failed_report_write_leaves_no_output(
    batch_dir: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    inp, target = batch_dir / "in_extracted.json", batch_dir / "in_extracted_selected.json"
    real_open = os.open

    def fail_report(path: Any, flags: int, mode: int = 0o777, *a: Any, **k: Any) -> int:
        if ".report.jsonl." in Path(os.fsdecode(path)).name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, mode, *a, **k)

    mocker.patch.object(os, "open", side_effect=fail_report)
    status, _, stderr = run_main([str(inp), "--report", str(batch_dir / "report.jsonl")], capsys)
    mocker.stopall()
    assert status == EXIT_IO_ERROR, stderr
    assert temporaries(batch_dir) == []
    assert not target.exists(), "the run failed, so no output may be left behind"


# --------------------------------------------------------------------------- for real, on a tiny file system


@pytest.fixture
def mountable() -> None:
    reason = can_mount()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def tiny_fs(tmp_path: Path, mountable: None) -> Iterator[Path]:
    with tmpfs(tmp_path / "tiny", "1m") as mnt:
        yield mnt


def test_real_disk_full_in_the_middle_of_the_write(tmp_path: Path, tiny_fs: Path) -> None:
    inp = tmp_path / "big_extracted.json"
    inp.write_bytes(synthetic_batch(1_500_000, seed=4))
    target = tiny_fs / "out.json"
    previous = b'{"articles": [], "previous": 1}\n' * 2000  # 64 KB that must survive
    target.write_bytes(previous)
    sha = inp.read_bytes()
    proc = run_select([inp, "--output", target])
    lines = stderr_lines(proc.stderr)
    assert proc.returncode == EXIT_IO_ERROR, proc.stderr
    assert len(lines) == 1 and "no space left on the device" in lines[0] and str(target) in lines[0], lines
    assert target.read_bytes() == previous
    assert sorted(os.listdir(tiny_fs)) == ["out.json"], "no temporary file may be left"
    assert inp.read_bytes() == sha
    # and once there is room, the same command succeeds
    target.unlink()
    small = tmp_path / "small_extracted.json"
    small.write_bytes(synthetic_batch(200_000, seed=4))
    assert run_select([small, "--output", target]).returncode == 0


def test_real_file_system_without_a_free_inode(tmp_path: Path, mountable: None) -> None:
    """ENOSPC at ``os.open``: a tmpfs whose only inode is its root directory."""
    inp = tmp_path / "in_extracted.json"
    inp.write_bytes(BATCH)
    with tmpfs(tmp_path / "noinode", "1m,nr_inodes=1") as mnt:
        target = mnt / "out.json"
        proc = run_select([inp, "--output", target])
        assert proc.returncode == EXIT_IO_ERROR, proc.stderr
        assert "no space left on the device" in proc.stderr and len(stderr_lines(proc.stderr)) == 1
        assert os.listdir(mnt) == []
    assert inp.read_bytes() == BATCH


def test_real_read_only_file_system(tmp_path: Path, mountable: None) -> None:
    """Root ignores file modes, so the read-only directory is a read-only mount
    (remounted ``ro`` after a previous output was written to it)."""
    inp = tmp_path / "in_extracted.json"
    inp.write_bytes(BATCH)
    with tmpfs(tmp_path / "ro", "1m") as mnt:
        target = mnt / "out.json"
        target.write_bytes(PREVIOUS)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True, capture_output=True)
        proc = run_select([inp, "--output", target])
        assert proc.returncode == EXIT_INVALID_INPUT, proc.stderr
        lines = stderr_lines(proc.stderr)
        assert len(lines) == 1 and "not writable" in lines[0] and "choose another --output" in lines[0], lines
        assert sorted(os.listdir(mnt)) == ["out.json"] and target.read_bytes() == PREVIOUS
    assert inp.read_bytes() == BATCH
