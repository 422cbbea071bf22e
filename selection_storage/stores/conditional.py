"""Conditional writes of one small file or object: created only where nothing is, replaced or deleted only while
it is still the version read (its tag).

An object store evaluates the condition on the write itself: S3 ``If-None-Match: *`` and ``If-Match: <ETag>``
(PutObject, DeleteObject), Google Cloud Storage ``ifGenerationMatch`` (``0``: no object), Azure ``If-None-Match: *``
and ``If-Match: <etag>`` (each in its backend's module).

A file on a disk is created by a hard link of a complete staged file (it appears whole, and only where nothing is),
and replaced or deleted under an exclusive ``flock`` of a hidden ``.<name>.lock`` beside it, which every writer here
holds while it compares and writes. Where that lock does not reach from one machine to another (NFSv3 without a lock
daemon, some FUSE mounts), two machines' replaces can interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from selection_core.errors import OutputPathError, SelectionError
from selection_storage.atomic import StagedFile, sync_folder, write_error
from selection_storage.files import read_error
from selection_storage.stores.backend import Tagged
from selection_storage.stores.failures import store_error
from selection_storage.stores.urls import Location, ObjectPath


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
    """A file on a disk (see the module's note on the lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = path.parent / f".{path.name}.lock"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This file's lock held; an ``OSError`` of a write typed."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # released when closed, or when its holder dies
                yield
            finally:
                os.close(fd)
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

    def _run(self, operation: str, writing: bool, *args: Any) -> Any:
        from fsspec.asyn import sync

        try:
            return sync(self._fs.loop, getattr(self.path.backend, operation), self._fs, self.path.key, *args)
        except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
            raise store_error(self.path, exc, writing) from None

    def read_tagged(self) -> Tagged | None:
        return self._run("read_tagged", False)

    def create_exclusive(self, data: bytes) -> str | None:
        return self._run("write_if", True, data, None)

    def replace_if(self, data: bytes, tag: str) -> str | None:
        return self._run("write_if", True, data, tag)

    def delete_if(self, tag: str) -> bool:
        return bool(self._run("delete_if", True, tag))
