"""The file shell around the pure core: reading, path checks, atomic writes.

This is the only module of ``selection_core`` that touches the file system.

Atomic write protocol (``write_atomic``): the bytes go to a temporary file in
the target's own directory (same file system, so the rename is atomic), which
is flushed, fsynced and closed, then ``os.replace``\\ d onto the target, and the
directory is fsynced. A reader therefore sees the previous file or the complete
new one, never a partial one. The temporary file is removed on every failure.
Its name, ``.<target name>.<pid>.<random>.cs-tmp``, marks it as ours: a later
write to the same target removes such files left by a process that no longer
exists (one killed with SIGKILL, say), and never touches anything else.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from selection_core.batch import (
    ProgressCallback,
    Summary,
    apply_selections,
    iter_dump_batch,
    parse_batch,
    select_articles,
    summarize,
)
from selection_core.errors import InvalidBatchError, OutputPathError, ReadError, SelectionError, WriteError
from selection_core.select import Selection
from selection_storage.paths import refuse_report_on_output, resolve_output_path

#: errno values for which retrying an I/O operation can help.
TRANSIENT_ERRNOS = frozenset(
    e
    for e in (errno.EIO, errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT, getattr(errno, "ESTALE", None))
    if e is not None
)
_TMP_SUFFIX = ".cs-tmp"


def read_input(path: str | os.PathLike[str]) -> bytes:
    """Read the whole input file (never opened for writing).

    Raises:
        InvalidBatchError: missing, a directory, unreadable, a symlink loop.
        ReadError: a machine I/O error that a retry may cure.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise read_error(p, exc) from (exc if exc.errno in TRANSIENT_ERRNOS else None)


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """Open the input for reading, with the errors of :func:`read_input`."""
    p = Path(path)
    try:
        return open(p, "rb")
    except OSError as exc:
        raise read_error(p, exc) from (exc if exc.errno in TRANSIENT_ERRNOS else None)


@dataclass(frozen=True)
class FileIdentity:
    """What tells one version of a file from another: inode, size, modification time.

    Workers that read their own part of an input compare it with the one the
    run planned from, so a file replaced or rewritten during the run is noticed.
    """

    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileIdentity:
        return cls(stat.st_ino, stat.st_size, stat.st_mtime_ns)


class InputChangedError(ReadError):
    """The input file changed while a run was reading it; running again reads the new one.

    Not transient: a retry of one step would mix two versions of the file.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.transient = False


def _changed(p: Path) -> InputChangedError:
    return InputChangedError(f"{p}: the file changed while it was being read; run again once it is complete")


def read_span(
    path: str | os.PathLike[str], identity: FileIdentity, start: int, end: int, before: bytes = b"", after: bytes = b""
) -> bytearray:
    """``before + <bytes start..end of the file> + after``, read by one copy.

    Raises:
        InputChangedError: the file is no longer the version ``identity`` describes.
        InvalidBatchError, ReadError: as :func:`read_input`.
    """
    p = Path(path)
    if not 0 <= start <= end:
        raise ValueError(f"bad span {start}..{end}")
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as exc:
        raise read_error(p, exc) from None
    try:
        if FileIdentity.of(os.fstat(fd)) != identity:
            raise _changed(p)
        out = bytearray(len(before) + (end - start) + len(after))
        out[: len(before)] = before
        out[len(out) - len(after) :] = after
        view = memoryview(out)[len(before) : len(before) + end - start]
        offset = start
        while view:
            got = os.preadv(fd, [view], offset)
            if got == 0:
                raise _changed(p)
            view = view[got:]
            offset += got
        return out
    except OSError as exc:
        if isinstance(exc, SelectionError):
            raise
        raise read_error(p, exc) from None
    finally:
        os.close(fd)


def read_error(p: Path, exc: OSError) -> SelectionError:
    """The typed error for an ``OSError`` met while reading the input ``p``."""
    if isinstance(exc, FileNotFoundError):
        return InvalidBatchError(f"{p}: no such file; check the input path")
    if isinstance(exc, IsADirectoryError):
        return InvalidBatchError(f"{p}: is a directory; give the path of a batch JSON file")
    if isinstance(exc, PermissionError):
        return InvalidBatchError(f"{p}: cannot be read (permission denied); make it readable by this user")
    if exc.errno == errno.ELOOP:
        return InvalidBatchError(f"{p}: symbolic link loop; point the path at a real file")
    if exc.errno in TRANSIENT_ERRNOS:
        return ReadError(f"{p}: read failed ({exc.strerror}); retry later", exc.errno)
    return InvalidBatchError(f"{p}: cannot be read ({exc.strerror or exc}); check the path")


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temporaries(target: Path) -> list[Path]:
    """Remove temporary files for ``target`` left by processes that no longer exist."""
    pattern = re.compile(r"\." + re.escape(target.name) + r"\.(\d+)\.[0-9a-f]{16}" + re.escape(_TMP_SUFFIX) + r"\Z")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.match(entry.name)
        if m and not process_alive(int(m.group(1))):
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except OSError:
                pass
    return removed


def _write_error(target: Path, exc: OSError) -> Exception:
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return OutputPathError(f"{target}: cannot write here ({exc.strerror}); choose another --output")
    if exc.errno == errno.ENOSPC:
        return WriteError(
            f"{target}: no space left on the device; free some space and run again (nothing was written)", exc.errno
        )
    if exc.errno == getattr(errno, "EDQUOT", -1):
        return WriteError(
            f"{target}: disk quota exceeded; free some space and run again (nothing was written)", exc.errno
        )
    transient = exc.errno in TRANSIENT_ERRNOS
    return WriteError(
        f"{target}: write failed ({exc.strerror or exc}); nothing was written{', retry' if transient else ''}",
        exc.errno,
        transient,
    )


def temporary_name(target: Path, pid: int | None = None, token: str | None = None) -> Path:
    """A temporary file's path beside ``target``: ``.<name>.<pid>.<16 hex>.cs-tmp``.

    ``pid`` is the process that owns it (default: this one): a later write to the
    same target removes it once that process is gone. ``token`` (16 lowercase hex
    digits) is random unless given.
    """
    token = secrets.token_hex(8) if token is None else token
    if re.fullmatch(r"[0-9a-f]{16}", token) is None:
        raise ValueError(f"token must be 16 lowercase hex digits, got {token!r}")
    return target.parent / f".{target.name}.{os.getpid() if pid is None else pid}.{token}{_TMP_SUFFIX}"


class StagedFile:
    """A temporary file beside ``target``, written piece by piece, then committed.

    Raises the same typed errors as :func:`write_atomic`; on any failure the
    temporary file is removed. Use :meth:`finish` (flush to disk) then
    :meth:`commit` (rename onto the target), or :meth:`discard`.
    """

    def __init__(self, target: Path, path: Path | None = None, durable: bool = True) -> None:
        self.target = target
        self.path = temporary_name(target) if path is None else path
        self._durable = durable
        self._fd = -1
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise _write_error(target, exc) from exc

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise _write_error(self.target, exc) from exc
            raise

    def finish(self) -> None:
        """Flush to disk (when durable) and close; the file is complete."""
        try:
            if self._durable:
                os.fsync(self._fd)
            fd, self._fd = self._fd, -1
            os.close(fd)
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise _write_error(self.target, exc) from exc
            raise

    def commit(self) -> None:
        """Rename the finished file onto the target (see :func:`_commit`)."""
        _commit(self.path, self.target)

    def discard(self) -> None:
        """Close and remove the temporary file (never raises)."""
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1
        _discard(self.path)


def _stage(target: Path, data: bytes | Iterable[bytes]) -> Path:
    """Write ``data`` to a fsynced temporary file beside ``target``; return its path.

    On any failure the temporary file is removed and the error is mapped.
    """
    clean_stale_temporaries(target)
    staged = StagedFile(target)
    try:
        for chunk in [data] if isinstance(data, bytes) else data:
            staged.write(chunk)
        staged.finish()
    except BaseException:
        staged.discard()
        raise
    return staged.path


def _discard(tmp: Path) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _commit(tmp: Path, target: Path) -> None:
    """Rename the staged file onto ``target`` and make the rename durable."""
    try:
        os.replace(tmp, target)
    except BaseException as exc:
        _discard(tmp)
        if isinstance(exc, OSError):
            raise _write_error(target, exc) from exc
        raise
    try:  # make the rename itself durable; not all file systems allow it
        dfd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def write_atomic(target: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` to ``target`` atomically (see the module docstring).

    Raises:
        OutputPathError: permission denied or read-only file system.
        WriteError: disk full or another I/O error; nothing was written.
    """
    write_atomic_group([(Path(target), data)])


def write_atomic_group(items: Sequence[tuple[Path, bytes | Iterable[bytes]]]) -> None:
    """Write several files so that a failure while writing leaves none of them.

    Every file is first staged (written and fsynced beside its target); only
    when all are staged are they renamed, in the given order. A failure while
    staging removes every staged file. Only a failed rename, once all the data is
    safely on disk, can leave the files renamed before it in place.
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for target, data in items:
            staged.append((_stage(target, data), target))
    except BaseException:
        for tmp, _ in staged:
            _discard(tmp)
        raise
    for i, (tmp, target) in enumerate(staged):
        try:
            _commit(tmp, target)
        except BaseException:
            for later, _ in staged[i + 1 :]:
                _discard(later)
            raise


def report_lines(selections: Iterable[Selection]) -> Iterable[bytes]:
    """The JSON Lines report: one explanation object per article."""
    for sel in selections:
        yield orjson.dumps(sel.to_dict()) + b"\n"


def write_report(target: str | os.PathLike[str], selections: Iterable[Selection]) -> None:
    """Write the JSON Lines report atomically."""
    write_atomic(target, report_lines(selections))


def sha256_file(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class RunResult:
    """What one batch run did."""

    input_path: Path
    output_path: Path
    report_path: Path | None
    summary: Summary
    selections: list[Selection]


def select_file(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    report_path: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> RunResult:
    """Read, validate, select and write one batch file. Nothing is written unless
    every check passed; the input is only ever opened for reading."""
    inp = Path(input_path)
    out = resolve_output_path(inp, output_path)
    report = None if report_path is None else resolve_output_path(inp, report_path, "--report")
    refuse_report_on_output(report, out, "choose another --report")
    doc = parse_batch(read_input(inp), str(inp))
    selections = select_articles(doc["articles"], progress)
    payload = iter_dump_batch(apply_selections(doc, selections))
    if report is None:
        write_atomic(out, payload)
    else:
        # Report first: where the output exists, its report does too; a failure
        # while writing either leaves neither.
        write_atomic_group([(report, report_lines(selections)), (out, payload)])
    del doc
    return RunResult(inp, out, report, summarize(selections), selections)
