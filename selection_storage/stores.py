"""Where a batch lives: a local file, or an object in a store (``s3://``, ``gs://``, ``az://``, ``memory://``)
reached through fsspec, each backend from its own package (``pip install 'content-selection[s3]'``).

A local path behaves exactly as without this module; ``file://`` URLs are local paths. An object is read in
ranges of one known version (its ETag, version or generation; a change is an :class:`InputChangedError`), and
written by one upload that the store completes last (a multipart upload on S3, aborted on any failure), so an
output object appears whole or not at all. Credentials come from where each backend's users set them
(environment, profiles, instance roles; ``AWS_ENDPOINT_URL`` for an S3-compatible store), and from the run's
``storage_options``, which are never put in a message.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Final

from selection_core.errors import (
    InvalidBatchError,
    OutputPathError,
    ReadError,
    SelectionError,
    UnsafePathError,
    WriteError,
)
from selection_storage.files import InputChangedError
from selection_storage.transient import TRANSIENT_ERRNOS

_SCHEME: Final[re.Pattern[str]] = re.compile(r"\A([A-Za-z][A-Za-z0-9+.-]*)://")

#: The project's extra that installs each protocol's backend.
EXTRAS: Final[dict[str, str]] = {
    **dict.fromkeys(("s3", "s3a"), "s3"),
    **dict.fromkeys(("gs", "gcs"), "gcs"),
    **dict.fromkeys(("az", "abfs", "abfss", "adl"), "azure"),
}

#: The size of the parts an output object is uploaded in (S3's smallest part is 5 MiB).
UPLOAD_PART_BYTES: Final[int] = 8 << 20


def is_url(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` names an object in a store (a URL other than ``file://``)."""
    if not isinstance(text, str):
        return isinstance(text, ObjectPath)
    m = _SCHEME.match(text)
    return m is not None and m[1].lower() != "file"


def local_text(text: str) -> str:
    """A ``file://`` URL as the local path it names; any other text as it is."""
    m = _SCHEME.match(text)
    if m is not None and m[1].lower() == "file":
        from urllib.parse import unquote, urlsplit

        return unquote(urlsplit(text).path)
    return text


@dataclass(frozen=True)
class ObjectPath:
    """An object's URL, ``<protocol>://<bucket>/<key>``: its key normalised, never with ``.`` or ``..`` segments;
    ``options`` (the run's ``storage_options``) travel with it and are never shown."""

    protocol: str
    key: str
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @classmethod
    def parse(cls, url: str, options: Mapping[str, Any] | None = None, what: str = "input") -> ObjectPath:
        """The object at ``url``; an ``UnsafePathError`` for a URL with ``.`` or ``..`` segments or no bucket."""
        m = _SCHEME.match(url)
        if m is None or "\x00" in url:
            raise UnsafePathError(f"{what} path {url!r} is not a URL of an object; write it as s3://BUCKET/KEY")
        rest = url[m.end() :]
        segments = rest.split("/")
        if any(s in (".", "..") for s in segments):
            raise UnsafePathError(f"{what} path {url!r} has '.' or '..' segments; give the object's own URL")
        key = "/".join(s for s in segments if s)
        if not key:
            raise UnsafePathError(f"{what} path {url!r} names no bucket; write it as {m[1]}://BUCKET/KEY")
        return cls(m[1].lower(), key, dict(options or {}))

    def __str__(self) -> str:
        return f"{self.protocol}://{self.key}"

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parent(self) -> ObjectPath:
        return ObjectPath(self.protocol, posixpath.dirname(self.key) or self.key, self.options)

    def with_name(self, name: str) -> ObjectPath:
        return ObjectPath(self.protocol, posixpath.join(posixpath.dirname(self.key), name), self.options)

    def joinpath(self, relative: str, what: str = "input") -> ObjectPath:
        """The object ``relative`` (a path under this prefix) names."""
        return ObjectPath.parse(f"{self}/{relative}", self.options, what)

    def is_relative_to(self, root: ObjectPath) -> bool:
        return self.protocol == root.protocol and (self.key == root.key or self.key.startswith(root.key + "/"))

    def filesystem(self) -> Any:
        """The fsspec file system of this object's protocol, with the run's options (cached by fsspec)."""
        import fsspec

        try:
            return fsspec.filesystem(self.protocol, **self.options)
        except ImportError:
            extra = EXTRAS.get(self.protocol)
            fix = f"pip install 'content-selection[{extra}]'" if extra else "install its fsspec backend"
            raise InvalidBatchError(
                f"{self}: {self.protocol}:// paths need a backend that is not installed; {fix}"
            ) from None
        except (TypeError, ValueError) as exc:
            raise InvalidBatchError(
                f"{self}: the storage options are refused ({type(exc).__name__}); check them"
            ) from None


#: A batch's place: a local file, or an object.
Location = Path | ObjectPath


def location(
    text: str | os.PathLike[str] | ObjectPath, options: Mapping[str, Any] | None = None, what: str = "input"
) -> Location:
    """The place ``text`` names: an :class:`ObjectPath` for a URL (with ``options``), else a local ``Path``."""
    if isinstance(text, ObjectPath):
        return text
    if isinstance(text, str) and is_url(text):
        return ObjectPath.parse(text, options, what)
    return Path(local_text(os.fspath(text)))


@dataclass(frozen=True)
class ObjectVersion:
    """What tells one version of an object from another: its size and its ETag, version or generation."""

    size: int
    tag: str

    @classmethod
    def of(cls, info: Mapping[str, Any]) -> ObjectVersion:
        for name in ("VersionId", "ETag", "generation", "etag", "version_id"):
            if info.get(name):
                return cls(int(info["size"]), f"{name}:{info[name]}")
        return cls(int(info["size"]), f"modified:{modified(info)}")


def modified(info: Mapping[str, Any]) -> float:
    """An object's modification time (seconds since the epoch) from its listing entry."""
    for name in ("LastModified", "mtime", "updated", "last_modified", "modified", "created"):
        value = info.get(name)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str) and value:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return 0.0


#: Failures of the connection to a store, by class name (the SDKs' own classes are not imported for this).
_CONNECTION_FAILURES: Final[frozenset[str]] = frozenset(
    {"ConnectionError", "TimeoutError", "HTTPClientError", "ClientConnectionError", "ClientPayloadError"}
    | {"FSTimeoutError", "ServerDisconnectedError", "IncompleteRead"}
)


def _transient(exc: BaseException) -> bool:
    """Whether another try may succeed: a transient errno (:data:`TRANSIENT_ERRNOS`: throttling, 5xx, EIO) or a
    failed connection."""
    if isinstance(exc, PermissionError | FileNotFoundError):
        return False
    if isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS:
        return True
    return any(t.__name__ in _CONNECTION_FAILURES for t in type(exc).__mro__)


def store_error(p: ObjectPath, exc: BaseException, writing: bool = False) -> SelectionError:
    """The typed, one-line error for a failure of the store at ``p`` (never naming the storage options)."""
    if isinstance(exc, SelectionError):
        return exc
    kind = OutputPathError if writing else InvalidBatchError
    if type(exc).__name__ == "FileExpired" or (isinstance(exc, OSError) and "pre-condition" in str(exc).lower()):
        return InputChangedError(f"{p}: the object changed while it was being read; run again once it is complete")
    if isinstance(exc, FileNotFoundError):
        what = "the bucket does not exist" if writing else "no such object (or bucket)"
        return kind(f"{p}: {what}; check the URL")
    if isinstance(exc, PermissionError):
        return kind(
            f"{p}: access denied by the store; check its credentials (environment, profile, instance role "
            "or storage options) and their permissions"
        )
    if type(exc).__name__ in ("NoCredentialsError", "PartialCredentialsError"):
        return kind(
            f"{p}: no credentials for the store were found; "
            "set them in the environment, a profile or the storage options"
        )
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    if _transient(exc):
        if writing:
            return WriteError(
                f"{p}: the store failed ({reason}); nothing was written, retry", getattr(exc, "errno", None), True
            )
        return ReadError(f"{p}: the store failed ({reason}); retry later", getattr(exc, "errno", None))
    if writing:
        return WriteError(f"{p}: the store refused the upload ({reason}); nothing was written")
    return InvalidBatchError(f"{p}: the store refused the read ({reason}); check the URL and the storage options")


def info(p: ObjectPath, writing: bool = False) -> dict[str, Any]:
    """The store's current entry for ``p`` (not a cached listing)."""
    fs = p.filesystem()
    try:
        fs.invalidate_cache(p.key)
        entry: dict[str, Any] = fs.info(p.key)
    except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
        raise store_error(p, exc, writing) from None
    if entry.get("type") == "directory":
        raise InvalidBatchError(f"{p}: is a prefix, not an object; give the URL of a batch")
    return entry


def version(p: ObjectPath) -> ObjectVersion:
    return ObjectVersion.of(info(p))


class ObjectReader:
    """An object opened for reading in ranges of the version it had when opened (:attr:`version`)."""

    def __init__(self, p: ObjectPath) -> None:
        self.path = p
        entry = info(p)
        fs = p.filesystem()
        try:
            # no read-ahead cache: each read is one ranged GET (with If-Match on S3), so memory stays bounded
            self._fh: BinaryIO = fs.open(p.key, "rb", cache_type="none", block_size=UPLOAD_PART_BYTES)
        except Exception as exc:  # noqa: BLE001
            raise store_error(p, exc) from None
        self.version = ObjectVersion.of(getattr(self._fh, "details", None) or entry)

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not isinstance(self._fh, io.BytesIO):  # memory:// hands out its one shared buffer: left open
            try:
                self._fh.close()
            except Exception:  # noqa: BLE001, S110 - a reader's close cannot lose data
                pass

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer at the end)."""
        try:
            return self._fh.read(n)
        except Exception as exc:  # noqa: BLE001
            raise store_error(self.path, exc) from None

    def read_at(self, start: int, length: int) -> bytes:
        try:
            self._fh.seek(start)
            data = self._fh.read(length)
        except Exception as exc:  # noqa: BLE001
            raise store_error(self.path, exc) from None
        if len(data) != length:
            raise store_error(self.path, OSError(errno.EINVAL, "pre-conditions: the object is shorter"))
        return data

    def check(self) -> None:
        """An ``InputChangedError`` unless the object is still the version read."""
        if version(self.path) != self.version:
            raise store_error(self.path, OSError(errno.EINVAL, "pre-condition failed"))


def read_object_span(
    p: ObjectPath, expected: ObjectVersion, start: int, end: int, before: bytes = b"", after: bytes = b""
) -> bytearray:
    """``before + <bytes start..end of the object> + after``; an ``InputChangedError`` if the object is no longer
    the version ``expected``."""
    with ObjectReader(p) as reader:
        if reader.version != expected:
            raise store_error(p, OSError(errno.EINVAL, "pre-condition failed"))
        data = reader.read_at(start, end - start)
        reader.check()
    out = bytearray(before)
    out += data
    out += after
    return out


class _MemoryUpload:
    """memory:// writes a file into its store when it is opened: keep the bytes here until the commit."""

    def __init__(self, fs: Any, key: str) -> None:
        self._fs, self._key, self._buffer = fs, key, bytearray()

    def write(self, data: bytes | memoryview) -> None:
        self._buffer += data

    def close(self) -> None:
        pass

    def commit(self) -> None:
        self._fs.pipe_file(self._key, bytes(self._buffer))

    def discard(self) -> None:
        self._buffer = bytearray()


class StagedObject:
    """An output object uploaded as it is written and made visible only by :meth:`commit` (the store completes the
    upload last); :meth:`discard` (or any failure) aborts it, so nothing appears. The interface of
    :class:`~selection_storage.atomic.StagedFile`."""

    def __init__(self, target: ObjectPath) -> None:
        self.target = target
        fs = target.filesystem()
        from fsspec.implementations.memory import MemoryFileSystem

        try:
            if isinstance(fs, MemoryFileSystem):
                self._fh: Any = _MemoryUpload(fs, target.key)
            else:
                self._fh = fs.open(target.key, "wb", autocommit=False, block_size=UPLOAD_PART_BYTES)
        except Exception as exc:  # noqa: BLE001
            raise store_error(target, exc, writing=True) from None

    def _do(self, action: str, *args: Any) -> None:
        try:
            getattr(self._fh, action)(*args)
        except BaseException as exc:
            self.discard()
            if isinstance(exc, Exception):
                raise store_error(self.target, exc, writing=True) from None
            raise

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._do("write", data)

    def write_all(self, pieces: Iterable[bytes]) -> None:
        try:
            for piece in pieces:
                self.write(piece)
            self.finish()
        except BaseException:
            self.discard()
            raise

    def finish(self) -> None:
        """Upload what is left (the object is still invisible)."""
        self._do("close")

    def release(self) -> None:
        pass

    def commit(self) -> None:
        self._do("commit")

    def discard(self) -> None:
        try:
            self._fh.discard()
        except Exception:  # noqa: BLE001, S110 - discarding never raises; an unfinished upload stays invisible
            pass
        # Marked closed, so that fsspec's __del__ does not close it, which would start a new upload of nothing.
        self._fh.closed = True


def walk_objects(prefix: ObjectPath) -> Iterator[tuple[ObjectPath, dict[str, Any]]]:
    """Every object under ``prefix`` (keys with a hidden segment skipped), sorted by key, with its entry."""
    fs = prefix.filesystem()
    try:
        found: dict[str, dict[str, Any]] = fs.find(prefix.key, detail=True)
    except Exception as exc:  # noqa: BLE001
        raise store_error(prefix, exc) from None
    for key in sorted(found):
        relative = key[len(prefix.key) :].strip("/")
        if any(part.startswith(".") for part in relative.split("/")):
            continue
        yield ObjectPath(prefix.protocol, key.strip("/"), prefix.options), found[key]


#: An unfinished upload older than this is taken for one whose writer died (a live one cannot be told apart).
STALE_UPLOAD_SECONDS: Final[int] = 3600


def abort_stale_uploads(prefix: ObjectPath, now: float | None = None) -> list[ObjectPath]:
    """Abort the unfinished multipart uploads under ``prefix`` started :data:`STALE_UPLOAD_SECONDS` or more ago (a
    killed writer's: never an object, but stored and billed); the objects they were for. Never raises."""
    import time

    fs = prefix.filesystem()
    if not hasattr(fs, "list_multipart_uploads"):
        return []
    bucket, _, key_prefix = prefix.key.partition("/")
    now = time.time() if now is None else now
    aborted: list[ObjectPath] = []
    try:
        uploads = fs.list_multipart_uploads(bucket)
        for upload in sorted(uploads, key=lambda u: (u["Key"], u["UploadId"])):
            key = upload["Key"]
            inside = not key_prefix or key == key_prefix or key.startswith(key_prefix.rstrip("/") + "/")
            if inside and now - modified({"LastModified": upload["Initiated"]}) >= STALE_UPLOAD_SECONDS:
                fs.abort_mpu(bucket, key, upload["UploadId"])
                aborted.append(ObjectPath(prefix.protocol, f"{bucket}/{key}", prefix.options))
    except Exception:  # noqa: BLE001, S110 - a sweep that fails is tried again by the next scan
        pass
    return aborted


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
        try:
            return getattr(self._fh, action)(*args)
        except Exception as exc:  # noqa: BLE001
            raise store_error(self._path, exc) from None

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


def open_binary(p: Location) -> BinaryIO:
    """A file or an object opened for reading, seekable: an object through an 8 MiB read-ahead cache, so that a
    sequential reader (a web archive's) streams it in ranges with bounded memory, each failure of the store one
    typed error (:func:`store_error`); a file as ``open`` opens it."""
    if isinstance(p, Path):
        return open(p, "rb")  # noqa: SIM115 - the caller closes it
    fs = p.filesystem()
    try:
        fh = fs.open(p.key, "rb", cache_type="readahead", block_size=UPLOAD_PART_BYTES)
    except Exception as exc:  # noqa: BLE001
        raise store_error(p, exc) from None
    return _ObjectStream(p, fh)  # type: ignore[return-value]


def size_of(p: Location) -> int:
    """The size of a file or an object, in bytes."""
    return os.stat(p).st_size if isinstance(p, Path) else int(info(p)["size"])
