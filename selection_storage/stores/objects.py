"""An object in a store (:class:`ObjectStore`), behind the interface of
:class:`~selection_storage.stores.protocol.Store`: read in ranges of one known version, written by one upload that
the store completes last."""

from __future__ import annotations

import contextlib
import errno
import io
import posixpath
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from selection_core.errors import InvalidBatchError, OutputPathError
from selection_storage.atomic import Staged
from selection_storage.files import Version
from selection_storage.stores.backend import UPLOAD_PART_BYTES, Changed
from selection_storage.stores.entries import (
    Entry,
    check_listable,
    listed_version,
    modified_ns,
    object_version,
    walk_objects,
)
from selection_storage.stores.failures import store_error
from selection_storage.stores.protocol import Store
from selection_storage.stores.retries import retried
from selection_storage.stores.uploads import StagedObject, abort_stale_uploads
from selection_storage.stores.urls import Location, ObjectPath


def read_range(p: ObjectPath, version: Version, start: int, into: memoryview) -> bool:
    """Fill ``into`` with the bytes of ``p`` from ``start`` by ONE ranged GET that the store serves only from
    ``version`` (S3: ``If-Match`` its ETag or its ``VersionId``; GCS: its ``generation``; Azure: ``If-Match`` its
    etag), read straight into ``into``. False (nothing requested) when the store or the version's tag has no
    such read. An ``InputChangedError`` when the object is no longer ``version`` (or is shorter); any other failure
    of the store is :func:`store_error`'s."""
    name, _, value = version.tag.partition(":")
    if not p.backend.conditional or not value or into.nbytes == 0:
        return False
    fs = p.filesystem()
    from fsspec.asyn import sync

    def get() -> int | None:
        try:
            return sync(fs.loop, p.backend.read_range, fs, p.fs_path, name, value, start, into)
        except Changed:
            return -1
        except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
            raise store_error(p, exc) from None

    got = retried(get)
    if got is None:
        return False
    if got != into.nbytes:
        raise store_error(p, OSError(errno.EINVAL, "pre-condition failed: the object changed or is shorter"))
    return True


def listed_versions(paths: Sequence[ObjectPath]) -> list[Version | None]:
    """Each file's version as :meth:`ObjectStore.listed_version` tells it, for files of one store that gives no
    listing (a web server): their HEADs sent together, a few at a time (:meth:`HTTP.entries`); a file whose HEAD
    failed is asked again alone, as any store call is (:func:`retried`, its typed error)."""
    if not paths:
        return []
    fs = paths[0].filesystem()
    from fsspec.asyn import sync

    found = sync(fs.loop, paths[0].backend.entries, fs, [p.fs_path for p in paths])
    return [
        ObjectStore(p).listed_version()
        if isinstance(entry, BaseException)
        else None
        if entry is None
        else listed_version(entry)
        for p, entry in zip(paths, found, strict=True)
    ]


class _ObjectStream(io.RawIOBase):
    """An object read through an fsspec file, each failure of the store one typed error (:func:`store_error`)."""

    def __init__(self, p: ObjectPath, fh: Any) -> None:
        super().__init__()
        self._path, self._fh = p, fh

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def _do(self, action: str, *args: Any) -> Any:
        def call() -> Any:  # a failed read leaves the file where it was: the same read is tried again
            try:
                return getattr(self._fh, action)(*args)
            except Exception as exc:  # noqa: BLE001
                raise store_error(self._path, exc) from None

        return retried(call)

    def read(self, size: int = -1) -> bytes:
        return bytes(self._do("read", size))

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._do("seek", offset, whence))

    def tell(self) -> int:
        return int(self._do("tell"))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._fh.close()
        super().close()


class ObjectStore:
    """An object (or a prefix) in a store, behind the interface of :class:`Store`."""

    def __init__(self, path: ObjectPath) -> None:
        self.path = path
        self.options = path.options
        self.folder_noun = "prefix" if path.backend.listable else "web server"  # a web server has no folders

    def _entry(self) -> dict[str, Any] | None:
        """The store's current entry here (not a cached listing), or None when nothing is here."""
        return retried(self._entry_once)

    def _entry_once(self) -> dict[str, Any] | None:
        fs = self.path.filesystem()
        try:
            fs.invalidate_cache(self.path.fs_path)
            return self.path.backend.entry(fs, self.path.fs_path)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
            raise store_error(self.path, exc) from None

    def _object(self) -> dict[str, Any]:
        """The store's current entry of this object; a typed error when there is none, or a prefix."""
        entry = self._entry()
        if entry is None:
            raise store_error(self.path, FileNotFoundError(errno.ENOENT, "no such object"))
        if entry.get("type") == "directory":
            raise InvalidBatchError(f"{self.path}: is a prefix, not an object; give the URL of a batch")
        return entry

    def version(self) -> Version:
        return object_version(self._object())

    @contextlib.contextmanager
    def _stream(self) -> Iterator[tuple[Version, _ObjectStream]]:
        """Opened without a read-ahead cache (each read one ranged GET: memory stays bounded), and the version."""
        entry = self._object()
        fh = self._opened(entry, cache_type="none", block_size=UPLOAD_PART_BYTES)
        with contextlib.closing(_ObjectStream(self.path, fh)) as stream:
            yield object_version({**entry, **(getattr(fh, "details", None) or {})}), stream

    @contextlib.contextmanager
    def reading(self) -> Iterator[tuple[Version, Callable[[int], bytes]]]:
        with self._stream() as (version, stream):
            yield version, stream.read

    def read_span(self, version: Version, start: int, end: int, before: bytes = b"", after: bytes = b"") -> bytearray:
        """One ranged GET conditioned on ``version`` where the backend has one (:func:`read_range`), else the
        object opened, read and checked; the bytes land in one buffer, ``before`` and ``after`` around them."""
        out = bytearray(len(before) + (end - start) + len(after))
        out[: len(before)] = before
        out[len(out) - len(after) :] = after
        view = memoryview(out)[len(before) : len(before) + end - start]
        if end > start and read_range(self.path, version, start, view):
            return out
        with self._stream() as (read_version, stream):  # a store without conditional reads: checked after
            stream.seek(start)
            if read_version != version or stream.readinto(view) != end - start or self.version() != version:
                raise store_error(self.path, OSError(errno.EINVAL, "pre-condition failed"))
        return out

    def open(self, block_size: int = UPLOAD_PART_BYTES) -> BinaryIO:
        # a read-ahead cache: a sequential reader (a web archive's) streams it in ranges with bounded memory
        entry = self._object() if not self.path.backend.listable else {}  # a web server's: its size and version
        fh = self._opened(entry, cache_type="readahead", block_size=block_size)
        return _ObjectStream(self.path, fh)  # type: ignore[return-value]

    def _opened(self, entry: dict[str, Any], **how: Any) -> Any:
        def call() -> Any:
            try:
                return self.path.backend.opened(self.path.filesystem(), self.path.fs_path, entry, **how)
            except Exception as exc:  # noqa: BLE001
                raise store_error(self.path, exc) from None

        return retried(call)

    def size(self) -> int:
        return int(self._object()["size"])

    def stage(self, token: str | None = None) -> Staged:
        self.path.check_writable()
        return StagedObject(self.path)

    def part(self, token: str, number: int) -> str | None:
        return None  # an object's chunks come back to be uploaded

    def remove_orphans_beside(self) -> None:
        pass  # an unfinished upload is never an object: aborted by a scan of its prefix (abort_stale_uploads)

    def remove(self) -> None:
        retried(self._remove_once)

    def _remove_once(self) -> None:
        try:
            self.path.filesystem().rm_file(self.path.fs_path)
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001 - each backend's errors, mapped
            raise store_error(self.path, exc, writing=True) from None

    def make_folders(self) -> None:
        pass  # a prefix is there as soon as an object is under it

    def check_output(self, source: Store, option: str) -> None:
        self.path.check_writable(option)
        if self.path == source.path:
            raise OutputPathError(
                f"{self.path}: is the input object itself; the input is never overwritten, choose another {option}"
            )  # its bucket is checked by the upload

    def kind(self) -> str | None:
        entry = self._entry()
        if entry is None:
            return None
        return "folder" if entry.get("type") == "directory" else "file"

    def files(self) -> list[Entry]:
        prefix = self.path
        return [
            Entry(p.key[len(prefix.key) :].strip("/"), p, False, modified_ns(entry))
            for p, entry in walk_objects(prefix)
            if entry.get("type", "file") == "file"
        ]

    def children(self) -> list[Entry]:
        """From one listing of every object under the prefix; a sub-prefix's time is its newest object's."""
        found: dict[str, Entry] = {}
        for p, entry in walk_objects(self.path):
            name, sep, _ = p.key[len(self.path.key) :].strip("/").partition("/")
            if not name or (not sep and entry.get("type", "file") != "file"):
                continue
            seen = found.get(name)
            newest = max(seen.newest or 0 if seen else 0, modified_ns(entry))
            folder = bool(sep) or (seen is not None and seen.is_folder)
            found[name] = Entry(name, self.path.joinpath(name), folder, newest)
        return [found[name] for name in sorted(found)]

    def listed(self) -> dict[str, Version]:
        check_listable(self.path)
        fs = self.path.filesystem()

        def call() -> list[dict[str, Any]]:
            try:
                fs.invalidate_cache(self.path.fs_path)
                return list(fs.ls(self.path.fs_path, detail=True))
            except FileNotFoundError:
                return []
            except Exception as exc:  # noqa: BLE001
                raise store_error(self.path, exc) from None

        entries = retried(call)
        found = {}
        for entry in entries:
            name = posixpath.basename(str(entry["name"]).rstrip("/"))
            if entry.get("type", "file") == "file" and name and not name.startswith("."):
                found[name] = listed_version(entry)
        return found

    def listed_version(self) -> Version | None:
        entry = self._entry()
        return None if entry is None or entry.get("type") == "directory" else listed_version(entry)

    def remove_orphans_under(
        self, stopped: Callable[[str], bool] | None = None, started_before: float | None = None
    ) -> list[Location]:
        return list(abort_stale_uploads(self.path, stopped=stopped, started_before=started_before))

    def resolve(self) -> Location:
        return self.path

    def absolute(self) -> Location:
        return self.path

    def spool_folder(self) -> Path | None:
        return None  # this machine's temporary folder
