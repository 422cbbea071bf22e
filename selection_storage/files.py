"""Reading input files (never opened for writing), one span of a known version."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from selection_core.errors import InvalidBatchError, ReadError, SelectionError
from selection_storage.transient import is_transient


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """Open the input for reading; raises :func:`read_error`'s errors."""
    p = Path(path)
    try:
        return open(p, "rb")
    except OSError as exc:
        raise read_error(p, exc) from (exc if is_transient(exc) else None)


@dataclass(frozen=True, slots=True)
class Version:
    """What tells one version of an input from another: its size and ``tag`` (a file's inode and modification time,
    an object's ETag, version or generation)."""

    size: int
    tag: str

    @classmethod
    def of_file(cls, stat: os.stat_result) -> Version:
        return cls(stat.st_size, f"inode:{stat.st_ino} mtime_ns:{stat.st_mtime_ns}")


class InputChangedError(ReadError):
    """The input file changed while a run was reading it. Not transient: a retry would mix two versions."""

    transient = False


def _changed(p: Path) -> InputChangedError:
    return InputChangedError(f"{p}: the file changed while it was being read; run again once it is complete")


def read_span(
    path: str | os.PathLike[str], identity: Version, start: int, end: int, before: bytes = b"", after: bytes = b""
) -> bytearray:
    """``before + <bytes start..end of the file> + after``, read by one copy; an ``InputChangedError`` if the
    file is no longer the version ``identity`` describes."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as exc:
        raise read_error(p, exc) from None
    try:
        if Version.of_file(os.fstat(fd)) != identity:
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
        if Version.of_file(os.fstat(fd)) != identity:  # rewritten while it was read: these bytes may mix versions
            raise _changed(p)
        return out
    except OSError as exc:
        if isinstance(exc, SelectionError):
            raise
        raise read_error(p, exc) from None
    finally:
        os.close(fd)


def read_error(p: Path, exc: OSError) -> SelectionError:
    """The typed error for an ``OSError`` met while reading the input ``p``: ``ReadError`` when transient."""
    if isinstance(exc, FileNotFoundError):
        return InvalidBatchError(f"{p}: no such file; check the input path")
    if isinstance(exc, IsADirectoryError):
        return InvalidBatchError(f"{p}: is a directory; give the path of a batch JSON file")
    if isinstance(exc, PermissionError):
        return InvalidBatchError(f"{p}: cannot be read (permission denied); make it readable by this user")
    if exc.errno == errno.ELOOP:
        return InvalidBatchError(f"{p}: symbolic link loop; point the path at a real file")
    if is_transient(exc):
        return ReadError(f"{p}: read failed ({exc.strerror}); retry later", exc.errno)
    return InvalidBatchError(f"{p}: cannot be read ({exc.strerror or exc}); check the path")
