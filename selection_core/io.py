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

import orjson

from .batch import ProgressCallback, Summary, apply_selections, iter_dump_batch, parse_batch, select_articles, summarize
from .errors import InvalidBatchError, OutputPathError, ReadError, WriteError
from .select import Selection

#: errno values for which retrying an I/O operation can help.
TRANSIENT_ERRNOS = frozenset(
    e
    for e in (errno.EIO, errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT, getattr(errno, "ESTALE", None))
    if e is not None
)
_TMP_SUFFIX = ".cs-tmp"


def default_output_path(input_path: str | os.PathLike[str]) -> Path:
    """``<stem>_selected.json`` beside the input.

    >>> default_output_path("data/batch_extracted.json").as_posix()
    'data/batch_extracted_selected.json'
    """
    p = Path(input_path)
    return p.with_name(f"{p.stem}_selected.json")


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
    except FileNotFoundError:
        raise InvalidBatchError(f"{p}: no such file; check the input path") from None
    except IsADirectoryError:
        raise InvalidBatchError(f"{p}: is a directory; give the path of a batch JSON file") from None
    except PermissionError:
        raise InvalidBatchError(f"{p}: cannot be read (permission denied); make it readable by this user") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InvalidBatchError(f"{p}: symbolic link loop; point the path at a real file") from None
        if exc.errno in TRANSIENT_ERRNOS:
            raise ReadError(f"{p}: read failed ({exc.strerror}); retry later", exc.errno) from exc
        raise InvalidBatchError(f"{p}: cannot be read ({exc.strerror or exc}); check the path") from None


def _resolved(path: Path, what: str) -> Path:
    try:
        return path.resolve(strict=False)
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a symlink loop
        if what == "input":
            raise InvalidBatchError(f"{path}: symbolic link loop; point the path at a real file") from None
        raise OutputPathError(f"{path}: symbolic link loop; choose another {what}") from None


def resolve_output_path(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    option: str = "--output",
) -> Path:
    """Check (without writing) where the output will go, and return it.

    ``option`` names the argument in messages (``--output``, ``--report``).

    Raises:
        InvalidBatchError: the input path is a symbolic link loop.
        OutputPathError: the output is the input itself, is a directory, is a
            symbolic link loop, or its directory is missing or not writable.
    """
    inp = Path(input_path)
    out = default_output_path(inp) if output_path is None else Path(output_path)
    out_resolved, inp_resolved = _resolved(out, option), _resolved(inp, "input")
    try:
        same = out.exists() and inp.exists() and os.path.samefile(inp, out)
    except OSError:
        same = False
    if same or out_resolved == inp_resolved:
        raise OutputPathError(
            f"{out}: is the input file itself; the input is never overwritten, choose another {option}"
        )
    if out.is_dir():
        raise OutputPathError(f"{out}: is a directory; give a file path for the output")
    parent = out.parent
    if not parent.is_dir():
        raise OutputPathError(f"{out}: the directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{out}: the directory {parent} is not writable; choose another {option}")
    return out


def _pid_alive(pid: int) -> bool:
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
        if m and not _pid_alive(int(m.group(1))):
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


def _stage(target: Path, data: bytes | Iterable[bytes]) -> Path:
    """Write ``data`` to a fsynced temporary file beside ``target``; return its path.

    On any failure the temporary file is removed and the error is mapped.
    """
    clean_stale_temporaries(target)
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(8)}{_TMP_SUFFIX}"
    fd = -1
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        chunks = [data] if isinstance(data, bytes) else data
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        os.fsync(fd)
        os.close(fd)
        fd = -1
    except BaseException as exc:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass
        _discard(tmp)
        if isinstance(exc, OSError):
            raise _write_error(target, exc) from exc
        raise
    return tmp


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
    if report is not None and report.resolve() == out.resolve():
        raise OutputPathError(f"{report}: the report path is the output path; choose another --report")
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
