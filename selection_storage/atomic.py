"""Atomic writes: a temporary file beside its target, fsynced, then renamed into place."""

from __future__ import annotations

import errno
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from selection_core.errors import OutputPathError, WriteError
from selection_storage.transient import TRANSIENT_ERRNOS

TMP_SUFFIX: Final[str] = ".cs-tmp"


@dataclass(frozen=True)
class WrittenFile:
    """A file this run wrote, with the fingerprint of its bytes."""

    path: Path
    sha256: str
    size_bytes: int


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
    pattern = re.compile(r"\." + re.escape(target.name) + r"\.(\d+)\.[0-9a-f]{16}" + re.escape(TMP_SUFFIX) + r"\Z")
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


def write_error(target: Path, exc: OSError) -> Exception:
    """The typed error for an ``OSError`` met while writing ``target``."""
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
    """``.<name>.<pid>.<token: 16 hex digits, random by default>.cs-tmp`` beside ``target``."""
    token = secrets.token_hex(8) if token is None else token
    return target.parent / f".{target.name}.{os.getpid() if pid is None else pid}.{token}{TMP_SUFFIX}"


class StagedFile:
    """A temporary file beside ``target``: :meth:`write`, :meth:`finish`, then :meth:`commit` or :meth:`discard`;
    any failure removes it and raises the errors of :func:`write_atomic`."""

    def __init__(self, target: Path, path: Path | None = None, durable: bool = True) -> None:
        self.target = target
        self.path = temporary_name(target) if path is None else path
        self._durable = durable
        self._fd = -1
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise write_error(target, exc) from exc

    @contextmanager
    def _or_discard(self) -> Iterator[None]:
        try:
            yield
        except BaseException as exc:
            self.discard()
            if isinstance(exc, OSError):
                raise write_error(self.target, exc) from exc
            raise

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        with self._or_discard():
            while view:
                view = view[os.write(self._fd, view) :]

    def write_all(self, pieces: Iterable[bytes]) -> None:
        try:
            for piece in pieces:
                self.write(piece)
            self.finish()
        except BaseException:  # a piece's own error (reading the input...) is raised as it is
            self.discard()
            raise

    def finish(self) -> None:
        with self._or_discard():
            if self._durable:
                os.fsync(self._fd)
            fd, self._fd = self._fd, -1
            os.close(fd)

    def commit(self) -> None:
        with self._or_discard():
            os.replace(self.path, self.target)
        try:
            dfd = os.open(self.target.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass

    def discard(self) -> None:
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1
        try:
            os.unlink(self.path)
        except OSError:
            pass


def commit_in_order(files: Sequence[StagedFile]) -> None:
    """Rename finished files onto their targets, in order; a failed rename discards the later ones."""
    for number, staged in enumerate(files):
        try:
            staged.commit()
        except BaseException:
            for later in files[number + 1 :]:
                later.discard()
            raise


def write_atomic(target: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` to ``target`` atomically: a reader sees the previous file or the complete new one.

    Raises:
        OutputPathError: permission denied or read-only file system.
        WriteError: disk full or another I/O error; nothing was written.
    """
    write_atomic_group([(Path(target), data)])


def write_atomic_group(items: Sequence[tuple[Path, bytes | Iterable[bytes]]]) -> None:
    """Write several files: all are staged, then renamed in order (only a failed rename leaves the earlier ones)."""
    staged: list[StagedFile] = []
    try:
        for target, data in items:
            clean_stale_temporaries(target)
            staged.append(StagedFile(target))
            staged[-1].write_all([data] if isinstance(data, bytes) else data)
    except BaseException:
        for done in staged:
            done.discard()
        raise
    commit_in_order(staged)
