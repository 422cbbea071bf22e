"""What one kind of object store does beyond fsspec's common interface, as a class: a store is one module with a
subclass of :class:`Backend`, named in :data:`~selection_storage.stores.urls.BACKENDS` by its URL schemes.

The defaults are fsspec's (or nothing): no conditional read or write, an upload by fsspec's own file, no sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, BinaryIO, Final

#: The size of the parts an output object is uploaded in: S3's smallest part, as a part is held twice while it is
#: sent (the writer's buffer and the part read from it).
UPLOAD_PART_BYTES: Final[int] = 5 << 20


@dataclass(frozen=True)
class Tagged:
    """A file's bytes, the tag of that version (an ETag, a generation; a file's SHA-256), and when it was written
    (seconds since the epoch, as the store tells it)."""

    data: bytes
    tag: str
    modified: float


class Changed(Exception):
    """The store refused a read conditioned on the version planned: the object changed."""


class Backend:
    """One kind of store. ``extra`` is the project's extra that installs its fsspec backend; ``endpoint_setting``
    names, for messages, where its endpoint is set (the storage options first, then the environment)."""

    extra: str | None = None
    endpoint_setting: str = "endpoint_url"
    #: The name of the field of a listing's entry whose value the conditional writes compare (``ETag``,
    #: ``generation``, ``etag``): a :class:`~selection_storage.files.Version`'s tag is ``<name>:<value>``.
    tag_name: str = ""
    #: Whether it reads and writes an object on a condition (:meth:`read_range`, :meth:`read_tagged`,
    #: :meth:`write_if`, :meth:`delete_if`).
    conditional: bool = False
    #: Whether an output can be written there (a web server's files are only read).
    writable: bool = True
    #: Whether its folders (prefixes) can be listed (a web server gives no listing: each file is asked for).
    listable: bool = True

    def __init__(self, extra: str | None = None) -> None:
        if extra is not None:
            self.extra = extra

    def endpoint(self, options: Mapping[str, Any]) -> str | None:
        """The endpoint its client is pointed at by ``options`` or the environment (None: the cloud's own)."""
        return None

    def filesystem_class(self, protocol: str, options: Mapping[str, Any]) -> type:
        """fsspec's class for ``protocol`` with ``options``."""
        import fsspec

        return fsspec.get_filesystem_class(protocol)

    def fs_path(self, protocol: str, key: str) -> str:
        """The path its fsspec file system takes for the object ``protocol://key``."""
        return key

    def entry(self, fs: Any, path: str) -> dict[str, Any] | None:
        """The store's entry of ``path`` (fsspec's ``info``): its type, size and version; None when nothing is
        there."""
        try:
            return dict(fs.info(path))
        except FileNotFoundError:
            return None

    async def entries(self, fs: Any, paths: list[str]) -> list[dict[str, Any] | None | BaseException]:
        """:meth:`entry` of each path, asked for together (a store that gives no listing has it)."""
        raise NotImplementedError

    def opened(self, fs: Any, path: str, entry: Mapping[str, Any], **how: Any) -> Any:
        """``path`` opened for reading (fsspec's file, with ``how``), ``entry`` being what :meth:`entry` found."""
        return fs.open(path, "rb", **how)

    async def read_range(self, fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
        """Fill ``into`` from ``start`` by one ranged GET served only from the version whose tag is ``name:value``:
        the bytes read, None (nothing requested) when it has no such read, :class:`Changed` when it is another."""
        return None

    def upload(self, fs: Any, key: str) -> Any:
        """A writer of the object ``key`` that nothing sees until its ``commit()`` (``discard()`` aborts it)."""
        return fs.open(key, "wb", autocommit=False, block_size=UPLOAD_PART_BYTES)

    def abort_uploads(self, fs: Any, bucket: str, key_prefix: str, stale: Callable[[str, Any], bool]) -> list[str]:
        """Abort the unfinished uploads under ``key_prefix`` for which ``stale(key, started)``: their keys."""
        return []

    async def read_tagged(self, fs: Any, key: str) -> Tagged | None:
        """The object's bytes and their version; None when nothing is there."""
        raise NotImplementedError

    async def write_if(
        self, fs: Any, key: str, data: bytes | BinaryIO, tag: str | None, size: int | None = None
    ) -> str | None:
        """Write ``data`` (bytes, or ``size`` bytes of a file from where it is) where nothing is (``tag`` None) or
        over the version ``tag``, in one request: the new tag, or None (nothing written) if the condition does not
        hold."""
        raise NotImplementedError

    async def delete_if(self, fs: Any, key: str, tag: str) -> bool:
        """Delete the version ``tag``; False (nothing deleted) if it is no longer it."""
        raise NotImplementedError


async def fill(into: memoryview, read: Callable[[memoryview], Any]) -> int:
    """Bytes read by ``await read(rest)`` (how many it wrote) until ``into`` is full or the body ends."""
    got = 0
    while got < into.nbytes:
        n = await read(into[got:])
        if not n:
            break
        got += n
    return got


def timestamp(value: datetime | str) -> float:
    """Seconds since the epoch of a store's time (a ``datetime``, or ISO 8601 text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.timestamp()
