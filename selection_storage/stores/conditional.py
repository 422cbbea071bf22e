"""Conditional writes of one small file or object: created only where nothing is, replaced or deleted only while
it is still the version read (its tag).

An object store evaluates the condition on the write itself: S3 ``If-None-Match: *`` and ``If-Match: <ETag>``
(PutObject, DeleteObject), Google Cloud Storage ``ifGenerationMatch`` (``0``: no object), Azure ``If-None-Match: *``
and ``If-Match: <etag>`` (each in its backend's module).

A file on a disk is created by a hard link of a complete staged file (it appears whole, and only where nothing is),
and replaced or deleted under the lock of its folder's conditional writes (:func:`_folder_locked`: a ``flock`` of
the folder itself), which every writer here holds while it compares and writes. Where that lock does not reach from
one machine to another (NFSv3 without a lock daemon, some FUSE mounts), two machines' replaces can interleave.

:class:`StagedIf` (and :func:`write_if`) writes an output of any size only over the version its writer found (its listed
:class:`~selection_storage.files.Version`; None: nothing there), so that a writer frozen between a check of its
right to write and the write itself cannot publish once another has written: a file is staged beside its target and
renamed under the folder's lock (a ``flock`` of the folder) after the version is compared; an object is
staged on this machine's disk, then sent in one request the store evaluates the condition on (S3 ``PutObject``, at
most 5 GiB; Azure's blocks committed ``If-Match``; Google Cloud Storage's multipart upload, which holds the object in
memory while it is sent).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from selection_core.errors import EXIT_TEMPFAIL, OutputPathError, SelectionError
from selection_storage.atomic import Staged, StagedFile, sync_folder, write_error
from selection_storage.files import Version, read_error
from selection_storage.stores.backend import Tagged
from selection_storage.stores.failures import store_error
from selection_storage.stores.objects import ObjectStore
from selection_storage.stores.retries import retried
from selection_storage.stores.urls import Location, ObjectPath
from selection_storage.transient import is_transient


@dataclass(frozen=True)
class Expected:
    """What a conditional write expects to find where it writes: the version its writer found (None: nothing)."""

    version: Version | None


class VersionChangedError(SelectionError):
    """A write conditioned on the version its writer found was refused: another writer wrote (or removed) the file
    or object since. Nothing was written."""

    exit_code = EXIT_TEMPFAIL
    transient = False


class Conditional(Protocol):
    """One file or object, written only on a condition. A store's failure is its typed error."""

    def read_tagged(self) -> Tagged | None:
        """Its bytes and their version; None when nothing is there."""

    def create_exclusive(self, data: bytes) -> str | None:
        """Write ``data`` where nothing is: the new version's tag, or None (nothing written) if something is."""

    def replace_if(self, data: bytes, tag: str) -> str | None:
        """Replace the version ``tag`` with ``data``: the new tag, or None (nothing written) if it is no longer it."""

    def delete_if(self, tag: str) -> bool:
        """Delete the version ``tag``; False (nothing deleted) if it is no longer it."""


def conditional(where: Location) -> Conditional:
    """The conditional writer of ``where``: where its store is chosen, once."""
    return ConditionalObject(where) if isinstance(where, ObjectPath) else ConditionalFile(where)


class ConditionalFile:
    """A file on a disk (see the module's note on the lock); its version's tag is the SHA-256 of its bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The lock of its folder's conditional writes held (:func:`_folder_locked`); an ``OSError`` typed."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _folder_locked(self.path):
                yield
        except SelectionError:
            raise
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def read_tagged(self) -> Tagged | None:
        try:
            with open(self.path, "rb") as fh:  # each write is a new file renamed into place: one version
                data, stat = fh.read(), os.fstat(fh.fileno())
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise read_error(self.path, exc) from None
        return Tagged(data, _digest(data), stat.st_mtime)

    def _staged(self, data: bytes) -> StagedFile:
        staged = StagedFile(self.path)
        staged.write_all([data])
        return staged

    def create_exclusive(self, data: bytes) -> str | None:
        with self._locked():
            staged = self._staged(data)
            try:
                os.link(staged.path, self.path)  # fails if anything is there, whoever holds the lock
            except FileExistsError:
                return None
            finally:
                staged.discard()
            sync_folder(self.path.parent)
        return _digest(data)

    def replace_if(self, data: bytes, tag: str) -> str | None:
        with self._locked():
            current = self.read_tagged()
            if current is None or current.tag != tag:
                return None
            self._staged(data).commit()
        return _digest(data)

    def delete_if(self, tag: str) -> bool:
        with self._locked():
            current = self.read_tagged()
            if current is None or current.tag != tag:
                return False
            os.unlink(self.path)
        return True


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ConditionalObject:
    """An object in a store that writes on a condition (S3, Google Cloud Storage, Azure Blob Storage)."""

    def __init__(self, path: ObjectPath) -> None:
        if not path.backend.conditional:
            raise OutputPathError(
                f"{path}: this store cannot write an object on a condition; use s3://, gs:// or az://"
            )
        self.path, self._fs = path, path.filesystem()

    def write_file(self, fh: BinaryIO, size: int, expected: Version | None) -> Version | None:
        """Send ``size`` bytes of ``fh`` (from its start) over the version ``expected`` (None: where nothing is):
        the new version, or None (nothing written) when the condition does not hold."""
        tag = None if expected is None else expected.tag.partition(":")[2]
        fh.seek(0)
        new = self._run("write_if", True, fh, tag, size)
        return None if new is None else Version(size, f"{self.path.backend.tag_name}:{new}")

    def _run(self, operation: str, writing: bool, *args: Any) -> Any:
        from fsspec.asyn import sync

        try:
            return sync(self._fs.loop, getattr(self.path.backend, operation), self._fs, self.path.key, *args)
        except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
            raise store_error(self.path, exc, writing) from None
        finally:
            if writing:  # the file system's listings of it, made before, are stale now
                self._fs.invalidate_cache(self.path.fs_path)

    def read_tagged(self) -> Tagged | None:
        return self._run("read_tagged", False)

    def create_exclusive(self, data: bytes) -> str | None:
        return self._run("write_if", True, data, None)

    def replace_if(self, data: bytes, tag: str) -> str | None:
        return self._run("write_if", True, data, tag)

    def delete_if(self, tag: str) -> bool:
        return bool(self._run("delete_if", True, tag))


class StagedIf(Staged):
    """An output staged as :class:`~selection_storage.atomic.Staged` says, whose :meth:`commit` writes it only over
    the version ``expected`` (None: only where nothing is), else raises :class:`VersionChangedError` (the module's
    note); :attr:`version` is the version it wrote."""

    def __init__(self, target: Location, expected: Version | None) -> None:
        self.target, self.expected = target, expected
        self.version: Version | None = None
        self._digest, self._size = hashlib.sha256(), 0
        if isinstance(target, ObjectPath):
            target.check_writable()
            self._object: ConditionalObject | None = ConditionalObject(target)
            self._file: Any = tempfile.TemporaryFile()  # noqa: SIM115 - closed by commit or discard
        else:
            self._object, self._file = None, StagedFile(target)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._digest.update(data)
        self._size += len(data)
        if self._object is None:
            self._file.write(data)
            return
        try:
            self._file.write(data)
        except OSError as exc:
            self.discard()
            raise write_error(Path(tempfile.gettempdir()), exc) from None

    def finish(self) -> None:
        if self._object is None:
            self._file.finish()
        else:
            self._file.flush()

    def commit(self) -> None:
        try:
            self.version = self._commit_file() if self._object is None else self._send(self._object)
        finally:
            self.discard()
        if self.version is None:
            raise VersionChangedError(
                f"{self.target}: another writer changed it since it was read; nothing was written over it"
            )

    def _commit_file(self) -> Version | None:
        target = Path(self.target)
        with _folder_locked(target):
            try:
                current: Version | None = Version.of_file(os.stat(target))
            except FileNotFoundError:
                current = None
            if current != self.expected:
                return None
            self._file.commit()
            return Version.of_file(os.stat(target))

    def _send(self, writer: ConditionalObject) -> Version | None:
        """Sent, tried again on a transient failure; a refusal after a failed try may be that try's own write (its
        reply lost): the object is then read back, and taken as written if its bytes are these."""
        failed = False

        def send() -> Version | None:
            nonlocal failed
            try:
                return writer.write_file(self._file, self._size, self.expected)
            except Exception as exc:
                failed = failed or is_transient(exc)
                raise

        written = retried(send)
        if written is None and failed:
            return self._read_back()
        return written

    def _read_back(self) -> Version | None:
        assert isinstance(self.target, ObjectPath)
        found = ObjectStore(self.target)
        version = found.listed_version()
        digest = hashlib.sha256()
        with found.open() as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
        same = version is not None and version.size == self._size and digest.digest() == self._digest.digest()
        return version if same else None

    def discard(self) -> None:
        if self._object is None:
            self._file.discard()
        else:
            self._file.close()


@contextlib.contextmanager
def _folder_locked(target: Path) -> Iterator[None]:
    """The lock of the conditional writes of ``target``'s folder held: an exclusive ``flock`` of the folder itself
    (nothing is written beside the outputs), or, where a folder cannot be locked (NFS emulates ``flock`` with
    POSIX locks, which need a file open for writing), of a hidden ``.content-selection-writes.lock`` in it.
    Released when closed, or when its holder dies."""
    fd = -1
    try:
        fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            fd = -1
            fd = os.open(target.parent / ".content-selection-writes.lock", os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        if fd >= 0:
            os.close(fd)
        raise write_error(target, exc) from None
    try:
        yield
    finally:
        os.close(fd)


def write_if(target: Location, data: bytes | Iterable[bytes], expected: Version | None) -> Version:
    """Write ``data`` to ``target`` atomically, only over the version ``expected`` (None: only where nothing is):
    the version written.

    Raises:
        VersionChangedError: another writer changed it since ``expected`` was read; nothing was written.
        OutputPathError, WriteError: as :func:`~selection_storage.stores.write_atomic`.
    """
    staged = StagedIf(target, expected)
    staged.write_all([data] if isinstance(data, bytes) else data)
    staged.commit()
    assert staged.version is not None
    return staged.version


def remove_if(where: Location, version: Version) -> bool:
    """Remove ``where`` only while it is still ``version`` (as its folder's listing told it): False, nothing removed,
    when another writer has changed or removed it since. On a disk the version is compared and the file unlinked
    under the folder's lock (a writer that does not take it, a rename of :func:`write_atomic`'s, is not held off)."""
    if isinstance(where, ObjectPath):
        tag = version.tag.partition(":")[2]
        return bool(retried(lambda: ConditionalObject(where).delete_if(tag)))
    path = Path(where)
    with _folder_locked(path):
        try:
            if Version.of_file(os.stat(path)) != version:
                return False
            os.unlink(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise write_error(path, exc) from None
    return True
