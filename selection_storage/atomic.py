"""Atomic writes: a temporary file beside its target, fsynced, then renamed into place."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from selection_core.errors import OutputPathError, WriteError
from selection_storage.transient import is_transient

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


#: This machine in staged files' names: 8 hex digits of its host name's SHA-256.
HOST_TAG: Final[str] = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]

#: A staged file: ``.<target>.<host>-<pid>.<token>.cs-tmp``, or a part of one ``.<...>.<token>-<part>.cs-tmp``.
STAGED_NAME: Final[re.Pattern[str]] = re.compile(
    r"\A\.(?P<target>.+)\.(?P<host>[0-9a-f]{8})-(?P<pid>\d+)\.(?P<token>[0-9a-f]{16})(?:-(?P<part>[0-9a-f]{8}))?"
    + re.escape(TMP_SUFFIX)
    + r"\Z"
)

#: A staged file written on another machine is removed only once its lock is free and it has not changed for this
#: long (its lock may not reach this machine: some network filesystems keep locks local).
ELSEWHERE_STALE_SECONDS: Final[int] = 3600


def _lock_free(fd: int) -> bool:
    """Take ``fd``'s exclusive lock if nobody holds it (the kernel drops a lock when its holder dies)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _held(path: Path) -> bool:
    """Whether a live writer holds the lock of the staged file at ``path`` (False once it is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return not _lock_free(fd)
    finally:
        os.close(fd)


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def remove_orphans(directory: str | os.PathLike[str], now: float | None = None) -> list[Path]:
    """Remove the staged files in ``directory`` whose writer is gone; return them, sorted.

    The owner is recognised by the lock it holds on its staged file from creation to rename (on a part: on the
    staged file it is a part of), which the kernel releases when the owner dies, however it dies, and which
    NFSv4 shares between machines. A file from another machine is also kept until it is
    :data:`ELSEWHERE_STALE_SECONDS` old. Never raises.
    """
    folder = Path(directory)
    removed: list[Path] = []
    try:
        entries = sorted(e.name for e in os.scandir(folder) if e.name.endswith(TMP_SUFFIX))
    except OSError:
        return removed
    now = time.time() if now is None else now
    for name in entries:
        m = STAGED_NAME.match(name)
        if m is None:
            continue
        if m["part"] is not None and _held(folder / f".{m['target']}.{m['host']}-{m['pid']}.{m['token']}{TMP_SUFFIX}"):
            continue
        path = folder / name
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if m["host"] != HOST_TAG and now - info.st_mtime < ELSEWHERE_STALE_SECONDS:
                continue
            if _lock_free(fd) and _names(path, fd):  # still the file that was checked
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
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
    transient = is_transient(exc)
    return WriteError(
        f"{target}: write failed ({exc.strerror or exc}); nothing was written{', retry' if transient else ''}",
        exc.errno,
        transient,
    )


def temporary_name(target: Path, token: str | None = None, part: int | None = None) -> Path:
    """This process's staged file for ``target`` (:data:`STAGED_NAME`; the token random by default), or its part."""
    token = secrets.token_hex(8) if token is None else token
    tail = "" if part is None else f"-{part:08x}"
    return target.parent / f".{target.name}.{HOST_TAG}-{os.getpid()}.{token}{tail}{TMP_SUFFIX}"


class Staged:
    """An output being written, invisible until :meth:`commit`: :meth:`write`, :meth:`finish`, then :meth:`commit`
    or :meth:`discard` (which never raises); any failure discards it."""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        raise NotImplementedError

    def write_all(self, pieces: Iterable[bytes]) -> None:
        try:
            for piece in pieces:
                self.write(piece)
            self.finish()
        except BaseException:  # a piece's own error (reading the input...) is raised as it is
            self.discard()
            raise

    def finish(self) -> None:
        """Write what is left; the output is still invisible."""
        raise NotImplementedError

    def release(self) -> None:
        """Leave a finished output staged (a part file lives on under its owner's lock)."""

    def commit(self) -> None:
        raise NotImplementedError

    def discard(self) -> None:
        raise NotImplementedError


class StagedFile(Staged):
    """A temporary file beside ``target``, staged as :class:`Staged` says; a failure raises the errors of
    :func:`~selection_storage.stores.write_atomic`. It is locked until committed or discarded
    (:func:`remove_orphans` tells a live writer's file by that lock)."""

    def __init__(self, target: Path, path: Path | None = None, durable: bool = True) -> None:
        self.target = target
        self.path = temporary_name(target) if path is None else path
        self._durable = durable
        self._fd = self._lock = -1  # the lock is held on its own descriptor, so that close() reports errors early
        try:
            while self._lock < 0:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                with contextlib.suppress(FileNotFoundError):  # a sweeper took it for an orphan: create it again
                    self._lock = os.open(self.path, os.O_RDONLY)
                    fcntl.flock(self._lock, fcntl.LOCK_EX)  # waits out a sweeper that opened it first (as above)
                if self._lock < 0 or not (_names(self.path, self._lock) and _names(self.path, self._fd)):
                    self._close_both()
        except OSError as exc:
            if self._fd >= 0:  # ours: created, so removed
                self.discard()
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

    def finish(self) -> None:
        """Flush (when durable) and close; the file stays locked until :meth:`commit` or :meth:`release`."""
        with self._or_discard():
            if self._durable:
                os.fsync(self._fd)
            fd, self._fd = self._fd, -1
            os.close(fd)

    def release(self) -> None:
        """Unlock a finished file and leave it where it is (a part: it lives on under its owner's lock)."""
        lock, self._lock = self._lock, -1
        if lock >= 0:
            os.close(lock)

    def commit(self) -> None:
        with self._or_discard():
            os.replace(self.path, self.target)
        self.release()
        sync_folder(self.target.parent)

    def _close_both(self) -> None:
        for fd in (self._fd, self._lock):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = self._lock = -1

    def discard(self) -> None:
        self._close_both()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def sync_folder(folder: Path) -> None:
    """Make the folder's entries (a rename, a link) durable; never raises."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def commit_in_order(files: Sequence[Staged]) -> None:
    """Rename finished files onto their targets, in order; a failed rename discards the later ones."""
    for number, staged in enumerate(files):
        try:
            staged.commit()
        except BaseException:
            for later in files[number + 1 :]:
                later.discard()
            raise
