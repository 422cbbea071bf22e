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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Final, Protocol

from selection_core.errors import (
    InvalidBatchError,
    MissingExtraError,
    OutputPathError,
    ReadError,
    SelectionError,
    ServiceUnavailableError,
    UnsafePathError,
    WriteError,
)
from selection_storage import files
from selection_storage.atomic import (
    TMP_SUFFIX,
    Staged,
    StagedFile,
    commit_in_order,
    remove_orphans,
    temporary_name,
    write_error,
)
from selection_storage.files import InputChangedError, Version, open_input, read_error
from selection_storage.transient import TRANSIENT_ERRNOS

_SCHEME: Final[re.Pattern[str]] = re.compile(r"\A([A-Za-z][A-Za-z0-9+.-]*)://")

#: The project's extra that installs each protocol's backend.
EXTRAS: Final[dict[str, str]] = {
    **dict.fromkeys(("s3", "s3a"), "s3"),
    **dict.fromkeys(("gs", "gcs"), "gcs"),
    **dict.fromkeys(("az", "abfs", "abfss", "adl"), "azure"),
}

#: Where each store's endpoint is set (the storage options first, then the environment), as messages name it.
ENDPOINT_SETTINGS: Final[dict[str, str]] = {
    "s3": "endpoint_url, AWS_ENDPOINT_URL",
    "gcs": "endpoint_url, STORAGE_EMULATOR_HOST",
    "azure": "connection_string, AZURE_STORAGE_CONNECTION_STRING",
}

#: Seconds to wait for a store's endpoint (set explicitly) to accept a connection before a run is refused.
CONNECT_TIMEOUT_SECONDS: Final[float] = 3.0

#: The size of the parts an output object is uploaded in: S3's smallest part, as a part is held twice while it is
#: sent (the writer's buffer and the part read from it).
UPLOAD_PART_BYTES: Final[int] = 5 << 20


def is_url(text: str | os.PathLike[str] | ObjectPath) -> bool:
    """Whether ``text`` names an object in a store (a URL other than ``file://``)."""
    if isinstance(text, ObjectPath):
        return True
    m = _SCHEME.match(os.fspath(text))
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

    def __truediv__(self, relative: str) -> ObjectPath:
        return self.joinpath(relative)

    def is_relative_to(self, root: ObjectPath) -> bool:
        return self.protocol == root.protocol and (self.key == root.key or self.key.startswith(root.key + "/"))

    def filesystem(self) -> Any:
        """The fsspec file system of this object's protocol, with the run's options (cached by fsspec). A store whose
        endpoint is set (an emulator, an S3-compatible service) is checked to accept a connection, once a process:
        the clients retry a refused connection for up to a minute and a half before they give up."""
        endpoint = endpoint_of(self.protocol, self.options)
        if endpoint is not None:
            reason = _refusal(endpoint)
            if reason is not None:
                raise ServiceUnavailableError(
                    f"{self}: the store cannot be reached at {endpoint} ({reason}); check its endpoint "
                    f"({ENDPOINT_SETTINGS[EXTRAS[self.protocol]]}) and the network, then run again"
                )
        try:
            return _filesystem_class(self.protocol, self.options)(**self.options)
        except ImportError:
            extra = EXTRAS.get(self.protocol)
            what = f"{self}: {self.protocol}:// paths need a backend that is not installed"
            if extra is None:
                raise InvalidBatchError(f"{what}; install its fsspec backend") from None
            raise MissingExtraError(what, extra) from None
        except (TypeError, ValueError) as exc:
            raise InvalidBatchError(
                f"{self}: the storage options are refused ({type(exc).__name__}); check them"
            ) from None


def endpoint_of(protocol: str, options: Mapping[str, Any]) -> str | None:
    """The endpoint a store's client is pointed at by ``options`` or the environment (None: the cloud's own)."""
    extra = EXTRAS.get(protocol)
    env = os.environ
    if extra == "s3":
        kwargs = options.get("client_kwargs") or {}
        return options.get("endpoint_url") or kwargs.get("endpoint_url") or env.get("AWS_ENDPOINT_URL") or None
    if extra == "gcs":
        return options.get("endpoint_url") or env.get("STORAGE_EMULATOR_HOST") or None
    if extra == "azure":
        text = str(options.get("connection_string") or env.get("AZURE_STORAGE_CONNECTION_STRING") or "")
        fields = dict(part.partition("=")[::2] for part in text.split(";") if "=" in part)
        return fields.get("BlobEndpoint") or None
    return None


def connection_refusal(url: str, timeout: float = CONNECT_TIMEOUT_SECONDS) -> str | None:
    """Why the host and port of ``url`` (``scheme://host:port``) do not accept a TCP connection; None if they do."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        socket.create_connection((parts.hostname or "", port), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        return str(getattr(exc, "strerror", None) or exc or type(exc).__name__).lower()
    return None


_reachable: set[str] = set()


def _refusal(endpoint: str) -> str | None:
    """:func:`connection_refusal` of a store's endpoint, asked until it has accepted once in this process."""
    if endpoint in _reachable:
        return None
    reason = connection_refusal(endpoint)
    if reason is None:
        _reachable.add(endpoint)
    return reason


def _filesystem_class(protocol: str, options: Mapping[str, Any]) -> type:
    """fsspec's class for ``protocol``; for Google Cloud Storage behind an emulator (``STORAGE_EMULATOR_HOST``, or
    the ``endpoint_url`` option) gcsfs's plain HTTP client: its default class first asks the bucket's type over
    gRPC, which an HTTP emulator never answers, and waits 60 s for each call before it falls back."""
    import fsspec

    if EXTRAS.get(protocol) == "gcs":
        import logging

        # gcsfs logs each failed request's traceback before it raises: the raised error is reported, in one line
        if not logging.getLogger("gcsfs").handlers:
            logging.getLogger("gcsfs").addHandler(logging.NullHandler())
        if endpoint_of(protocol, options) is not None:
            from gcsfs.core import GCSFileSystem

            return GCSFileSystem
    return fsspec.get_filesystem_class(protocol)


#: A batch's place: a local file, or an object.
Location = Path | ObjectPath


def location(
    text: str | os.PathLike[str] | ObjectPath, options: Mapping[str, Any] | None = None, what: str = "input"
) -> Location:
    """The place ``text`` names: an :class:`ObjectPath` for a URL (with ``options``), else a local ``Path``."""
    if isinstance(text, ObjectPath):
        return text
    if is_url(text):
        return ObjectPath.parse(os.fspath(text), options, what)
    return Path(local_text(os.fspath(text)))


#: The fields of a listing's entry that tell an object's version (a listing has no version id), by preference.
_LISTED_TAGS: Final[tuple[str, ...]] = ("ETag", "generation", "etag")


def _version_of(entry: Mapping[str, Any], tags: Sequence[str]) -> Version:
    for name in tags:
        if entry.get(name):
            return Version(int(entry["size"]), f"{name}:{entry[name]}")
    return Version(int(entry["size"]), f"modified:{modified(entry)}")


def object_version(entry: Mapping[str, Any]) -> Version:
    """An object's version from its entry: its size and its version id, else its ETag or generation."""
    return _version_of(entry, ("VersionId", *_LISTED_TAGS, "version_id"))


def _listed_version(entry: Mapping[str, Any]) -> Version:
    """An object's version as a listing tells it: its size and its ETag or generation."""
    return _version_of(entry, _LISTED_TAGS)


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


#: Failures to reach a store's endpoint (refused, no such host, closed before a response), and other failures of
#: the connection, by class name (the SDKs' own classes are not imported for this).
_UNREACHABLE: Final[frozenset[str]] = frozenset(
    {
        "ConnectionError",
        "ConnectionClosedError",
        "ClientConnectorError",
        "ServerDisconnectedError",
        "ServiceRequestError",
    }
)
_CONNECTION_FAILURES: Final[frozenset[str]] = frozenset(
    {
        "TimeoutError",
        "HTTPClientError",
        "ClientConnectionError",
        "ClientPayloadError",
        "FSTimeoutError",
        "IncompleteRead",
        "ServiceResponseError",
    }
)


def _azure_status(exc: BaseException) -> int | None:
    """The HTTP status of an Azure SDK error, which adlfs passes on as it is (None for any other error)."""
    return getattr(exc, "status_code", None) if _named(exc, frozenset({"HttpResponseError"})) else None


def _named(exc: BaseException, names: frozenset[str]) -> bool:
    return any(t.__name__ in names for t in type(exc).__mro__)


def _transient(exc: BaseException) -> bool:
    """Whether another try may succeed: a transient errno (:data:`TRANSIENT_ERRNOS`: throttling, 5xx, EIO) or a
    failed connection."""
    if isinstance(exc, PermissionError | FileNotFoundError):
        return False
    if isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS:
        return True
    return _named(exc, _CONNECTION_FAILURES)


def store_error(p: ObjectPath, exc: BaseException, writing: bool = False) -> SelectionError:
    """The typed, one-line error for a failure of the store at ``p`` (never naming the storage options)."""
    if isinstance(exc, SelectionError):
        return exc
    kind = OutputPathError if writing else InvalidBatchError
    if type(exc).__name__ == "FileExpired" or (isinstance(exc, OSError) and "pre-condition" in str(exc).lower()):
        return InputChangedError(f"{p}: the object changed while it was being read; run again once it is complete")
    if isinstance(exc, FileNotFoundError) or _azure_status(exc) == 404:
        what = "the bucket does not exist" if writing else "no such object (or bucket)"
        return kind(f"{p}: {what}; check the URL")
    if isinstance(exc, PermissionError) or _azure_status(exc) in (401, 403):
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
    if _named(exc, _UNREACHABLE):
        return ServiceUnavailableError(
            f"{p}: the store cannot be reached ({reason}); {'nothing was written; ' if writing else ''}"
            f"check its endpoint ({ENDPOINT_SETTINGS.get(EXTRAS.get(p.protocol, ''), 'endpoint_url')}) and the "
            "network, then run again"
        )
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


def backend(fs: Any) -> str:
    """Which client ``fs`` is, where the stores differ in what they can do: ``"s3"`` (s3fs), ``"gcs"`` (gcsfs),
    ``"azure"`` (adlfs's blob storage), ``"memory"``, or ``""`` for any other."""
    package, name = type(fs).__module__.partition(".")[0], type(fs).__name__
    if name == "AzureBlobFileSystem":
        return "azure"
    return {"s3fs": "s3", "gcsfs": "gcs", "fsspec": "memory" if name == "MemoryFileSystem" else ""}.get(package, "")


def read_range(p: ObjectPath, version: Version, start: int, into: memoryview) -> bool:
    """Fill ``into`` with the bytes of ``p`` from ``start`` by ONE ranged GET that the store serves only from
    ``version`` (S3: ``If-Match`` its ETag or its ``VersionId``; GCS: its ``generation``; Azure: ``If-Match`` its
    etag), read straight into ``into``. False (nothing requested) when the store or the version's tag has no
    such read. An ``InputChangedError`` when the object is no longer ``version`` (or is shorter); any other failure
    of the store is :func:`store_error`'s."""
    fs = p.filesystem()
    reader = _RANGE_READERS.get(backend(fs))
    name, _, value = version.tag.partition(":")
    if reader is None or not value or into.nbytes == 0:
        return False
    from fsspec.asyn import sync

    try:
        got = sync(fs.loop, reader, fs, p.key, name, value, start, into)
    except _Changed:
        got = -1
    except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
        raise store_error(p, exc) from None
    if got is None:
        return False
    if got != into.nbytes:
        raise store_error(p, OSError(errno.EINVAL, "pre-condition failed: the object changed or is shorter"))
    return True


class _Changed(Exception):
    """The store refused a read conditioned on the version planned: the object changed."""


async def _fill(into: memoryview, read: Callable[[memoryview], Any]) -> int:
    """Bytes read by ``await read(rest)`` (how many it wrote) until ``into`` is full or the body ends."""
    got = 0
    while got < into.nbytes:
        n = await read(into[got:])
        if not n:
            break
        got += n
    return got


async def _s3_range(fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
    conditions = {"ETag": "IfMatch", "VersionId": "VersionId"}
    if name not in conditions:
        return None
    bucket, key, _ = fs.split_path(key)
    ranged = {"Range": f"bytes={start}-{start + into.nbytes - 1}", conditions[name]: value}
    try:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key, **ranged)
    except OSError as exc:
        code = getattr(exc.__cause__, "response", {}).get("Error", {}).get("Code")
        if code in ("PreconditionFailed", "412") or (name == "VersionId" and isinstance(exc, FileNotFoundError)):
            raise _Changed from None  # another ETag; or the version read is gone
        raise
    body = response["Body"]
    try:
        return await _fill(into, body.readinto)
    finally:
        body.close()


async def _gcs_range(fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
    if name != "generation":
        return None
    from gcsfs.retry import validate_response

    bucket, path, _ = fs.split_path(key)
    await fs._set_session()
    url = fs.url(f"{bucket}/{path}")  # the media URL (alt=media)
    headers = fs._get_headers({"Range": f"bytes={start}-{start + into.nbytes - 1}"})
    # that generation's bytes, or 404 once it is gone (overwritten, deleted): as S3's VersionId
    params = fs._get_params({"generation": value})
    async with fs.session.get(url, params=params, headers=headers, timeout=fs.requests_timeout) as r:
        if r.status in (404, 412):
            raise _Changed
        if r.status >= 400:
            validate_response(r.status, await r.read(), url)

        async def read(rest: memoryview) -> int:
            data = await r.content.read(rest.nbytes)
            rest[: len(data)] = data
            return len(data)

        return await _fill(into, read)


async def _azure_range(fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
    if name != "etag":
        return None
    from azure.core import MatchConditions
    from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

    container, blob, _ = fs.split_path(key)
    async with fs.service_client.get_blob_client(container=container, blob=blob) as client:
        try:
            download = await client.download_blob(
                offset=start, length=into.nbytes, etag=value, match_condition=MatchConditions.IfNotModified
            )
        except ResourceModifiedError:
            raise _Changed from None
        except ResourceNotFoundError as exc:
            raise FileNotFoundError(errno.ENOENT, "no such object") from exc
        got = 0
        async for data in download.chunks():
            size = min(len(data), into.nbytes - got)
            into[got : got + size] = data[:size]
            got += len(data)
        return got


#: The conditional ranged reads, by :func:`backend`.
_RANGE_READERS: Final[dict[str, Callable[..., Any]]] = {"s3": _s3_range, "gcs": _gcs_range, "azure": _azure_range}


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


class _BlockUpload:
    """Azure Blob Storage: adlfs commits a blob's block list when its file closes, so here the blocks are staged as
    they are written and the list is committed by :meth:`commit` alone. Blocks never committed are never part of a
    blob (:func:`abort_stale_uploads` deletes those of a killed writer; Azure drops any left after a week)."""

    def __init__(self, fs: Any, key: str) -> None:
        import secrets

        self._fs, (self._container, _, self._blob) = fs, key.partition("/")
        self._token, self._ids, self._buffer = secrets.token_hex(8), [], bytearray()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        from fsspec.asyn import sync

        async def call() -> Any:
            async with self._fs.service_client.get_blob_client(self._container, self._blob) as blob:
                return await getattr(blob, method)(*args, **kwargs)

        return sync(self._fs.loop, call)

    def _stage(self, data: bytes | bytearray | memoryview) -> None:
        import base64

        block = base64.b64encode(f"{self._token}-{len(self._ids):08d}".encode()).decode()
        self._call("stage_block", block, data, length=len(data))
        self._ids.append(block)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data
        while len(self._buffer) >= UPLOAD_PART_BYTES:
            self._stage(memoryview(self._buffer)[:UPLOAD_PART_BYTES])
            del self._buffer[:UPLOAD_PART_BYTES]

    def close(self) -> None:
        if self._buffer:
            self._stage(self._buffer)
            self._buffer = bytearray()

    def commit(self) -> None:
        from azure.storage.blob import BlobBlock

        self._call("commit_block_list", [BlobBlock(block) for block in self._ids])

    def discard(self) -> None:
        self._buffer, staged, self._ids = bytearray(), self._ids, []
        if staged:  # the blocks of a blob that has no committed version: deleted (a blob committed meanwhile stays)
            _abort_uncommitted_blobs(self._fs, self._container, self._blob, lambda key, _: key == self._blob)


class StagedObject(Staged):
    """An output object uploaded as it is written and made visible only by :meth:`commit` (the store completes the
    upload last); :meth:`discard` (or any failure) aborts it, so nothing appears."""

    def __init__(self, target: ObjectPath) -> None:
        self.target, self._committed = target, False
        fs = target.filesystem()
        try:
            if backend(fs) == "memory":
                self._fh: Any = _MemoryUpload(fs, target.key)
            elif backend(fs) == "azure":
                self._fh = _BlockUpload(fs, target.key)
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

    def finish(self) -> None:
        self._do("close")

    def commit(self) -> None:
        self._do("commit")
        self._committed = True

    def discard(self) -> None:
        if self._committed:  # the object is the output now: nothing to abort
            return
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


@dataclass(frozen=True)
class Entry:
    """A file or a folder found by a listing (an object or a prefix in a store), hidden names skipped."""

    relative: str  # its ``/``-separated path under the folder listed
    where: Location
    is_folder: bool = False
    newest: int | None = None  # :meth:`modified_ns` when the listing told it (a store's); None: asked when needed

    def modified_ns(self) -> int:
        """When it was last changed (a folder: the newest of it and of everything under it), in nanoseconds."""
        if self.newest is not None:
            return self.newest
        path = Path(self.where)
        newest = path.stat().st_mtime_ns
        if not self.is_folder:
            return newest
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in [*dirnames, *filenames]:
                if not name.startswith("."):
                    try:
                        newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
                    except OSError:  # vanished, or a broken link: its reader reports it
                        continue
        return newest


def _object_ns(entry: Mapping[str, Any]) -> int:
    return round(modified(entry) * 1e9)


#: An unfinished upload older than this is taken for one whose writer died (a live one cannot be told apart).
STALE_UPLOAD_SECONDS: Final[int] = 3600


def abort_stale_uploads(
    prefix: ObjectPath, now: float | None = None, older_than: float = STALE_UPLOAD_SECONDS
) -> list[ObjectPath]:
    """Abort the unfinished uploads under ``prefix`` started ``older_than`` seconds or more ago (a killed writer's:
    never an object, but stored and billed); the objects they were for. Never raises. 0 aborts every one: for a
    caller that knows every writer under the prefix has stopped.

    S3: its multipart uploads. Azure: the blobs that have uncommitted blocks only (a blob committed meanwhile is
    kept: the delete is conditioned on the listed time). Google Cloud Storage cannot list its resumable uploads;
    an unfinished one is never an object, and expires after a week."""
    import time

    fs = prefix.filesystem()
    bucket, _, key_prefix = prefix.key.partition("/")
    now = time.time() if now is None else now

    def stale(key: str, started: Any) -> bool:
        inside = not key_prefix or key == key_prefix or key.startswith(key_prefix.rstrip("/") + "/")
        return inside and now - modified({"LastModified": started}) >= older_than

    try:
        if backend(fs) == "s3":
            keys = _abort_multipart_uploads(fs, bucket, stale)
        elif backend(fs) == "azure":
            keys = _abort_uncommitted_blobs(fs, bucket, key_prefix, stale)
        else:
            return []
    except Exception:  # noqa: BLE001 - a sweep that fails is tried again by the next scan
        return []
    return [ObjectPath(prefix.protocol, f"{bucket}/{key}", prefix.options) for key in keys]


def _abort_multipart_uploads(fs: Any, bucket: str, stale: Callable[[str, Any], bool]) -> list[str]:
    aborted: list[str] = []
    for upload in sorted(fs.list_multipart_uploads(bucket), key=lambda u: (u["Key"], u["UploadId"])):
        if stale(upload["Key"], upload["Initiated"]):
            fs.abort_mpu(bucket, upload["Key"], upload["UploadId"])
            aborted.append(upload["Key"])
    return aborted


def _abort_uncommitted_blobs(fs: Any, bucket: str, key_prefix: str, stale: Callable[[str, Any], bool]) -> list[str]:
    from fsspec.asyn import sync

    async def sweep() -> list[str]:
        container = fs.service_client.get_container_client(bucket)
        start = key_prefix or None
        committed = {blob.name async for blob in container.list_blobs(name_starts_with=start)}
        listed = [blob async for blob in container.list_blobs(name_starts_with=start, include=["uncommittedblobs"])]
        aborted: list[str] = []
        for blob in sorted(listed, key=lambda b: str(b.name)):
            if blob.name not in committed and stale(blob.name, blob.last_modified):
                try:
                    await container.delete_blob(blob.name, if_unmodified_since=blob.last_modified)
                except Exception:  # noqa: BLE001, S112 - committed (or swept) since it was listed: kept
                    continue
                aborted.append(blob.name)
        return aborted

    return list(sync(fs.loop, sweep))


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


class Store(Protocol):
    """A file or an object, bound to its place (:attr:`path`): the operations that differ between local disks and
    object stores. :func:`store` chooses the implementation, once."""

    path: Location
    options: Mapping[str, Any]  # the run's storage options (none for a file)
    folder_noun: str  # what a folder is called here: a "directory", a "prefix"

    def version(self) -> Version: ...

    def reading(self) -> contextlib.AbstractContextManager[tuple[Version, Callable[[int], bytes]]]:
        """Opened for one pass from its start: the version read, and ``read(n)``."""

    def read_span(self, version: Version, start: int, end: int, before: bytes = b"", after: bytes = b"") -> bytearray:
        """``before + <bytes start..end> + after`` of ``version``; an ``InputChangedError`` if it is no longer it."""

    def open(self, block_size: int = UPLOAD_PART_BYTES) -> BinaryIO:
        """Opened for streaming reads, seekable, an object read ahead ``block_size`` bytes at a time; each failure of
        a store one typed error (:func:`store_error`)."""

    def size(self) -> int: ...

    def stage(self, token: str | None = None) -> Staged:
        """The output staged here (a file's temporary name with ``token``, random by default)."""

    def part(self, token: str, number: int) -> str | None:
        """Where chunk ``number`` of the output staged with ``token`` is written; None: its bytes come back."""

    def remove_orphans_beside(self) -> None:
        """Remove the staged outputs whose writer is gone from this output's folder."""

    def remove(self) -> None:
        """Remove this file (object) if it is there; a store that fails raises its typed error."""

    def check_output(self, source: Store, option: str) -> None:
        """An ``OutputPathError`` (naming ``option``) if the output cannot go here: the input, a folder..."""

    def is_file(self, out: Path, out_resolved: Path) -> bool:
        """Whether the local file ``out`` (``out_resolved`` resolved) is this input."""

    def kind(self) -> str | None:
        """``"file"`` (an object), ``"folder"`` (a prefix with objects under it), or None when nothing is there; a
        store that fails raises its typed error."""

    def files(self) -> list[Entry]:
        """Every file under this folder (object under this prefix), hidden names skipped at every level and folders
        linked to not followed, sorted by relative path; nothing under a prefix is an empty list, and a folder that
        is not there an ``OSError``."""

    def children(self) -> list[Entry]:
        """The files and folders (objects and sub-prefixes) directly in this one, hidden names skipped, by name;
        a folder that cannot be listed an ``OSError``."""

    def listed(self) -> dict[str, Version]:
        """The files directly in this folder (objects directly under this prefix) by name, hidden names skipped, each
        with its version as one listing tells it (:meth:`listed_version`'s); a folder that is not there: empty."""

    def listed_version(self) -> Version | None:
        """This file's version as its folder's :meth:`listed` tells it (an object's ETag or generation, not its
        version id, which a listing omits); None when nothing is here."""

    def remove_orphans_under(self, writers_stopped: bool = False) -> list[Location]:
        """Remove what killed writers left under this folder (staged files; a store's unfinished uploads over an
        hour old, or every one when the caller knows its ``writers_stopped``); what they were for."""

    def resolve(self) -> Location:
        """Symbolic links and ``..`` followed (an object is its own)."""

    def absolute(self) -> Location:
        """``~`` expanded, made absolute (an object is its own)."""

    def spool_folder(self) -> Path | None:
        """Where a temporary file written on the way to this output goes (None: the temporary folder)."""


class ObjectStore:
    """An object in a store, behind the interface of :class:`Store`."""

    folder_noun = "prefix"

    def __init__(self, path: ObjectPath) -> None:
        self.path = path
        self.options = path.options

    def version(self) -> Version:
        return object_version(info(self.path))

    @contextlib.contextmanager
    def _stream(self) -> Iterator[tuple[Version, _ObjectStream]]:
        """Opened without a read-ahead cache (each read one ranged GET: memory stays bounded), and the version."""
        entry = info(self.path)
        try:
            fh = self.path.filesystem().open(self.path.key, "rb", cache_type="none", block_size=UPLOAD_PART_BYTES)
        except Exception as exc:  # noqa: BLE001
            raise store_error(self.path, exc) from None
        with contextlib.closing(_ObjectStream(self.path, fh)) as stream:
            yield object_version(getattr(fh, "details", None) or entry), stream

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
        try:
            fh = self.path.filesystem().open(self.path.key, "rb", cache_type="readahead", block_size=block_size)
        except Exception as exc:  # noqa: BLE001
            raise store_error(self.path, exc) from None
        return _ObjectStream(self.path, fh)  # type: ignore[return-value]

    def size(self) -> int:
        return int(info(self.path)["size"])

    def stage(self, token: str | None = None) -> Staged:
        return StagedObject(self.path)

    def part(self, token: str, number: int) -> str | None:
        return None  # an object's chunks come back to be uploaded

    def remove_orphans_beside(self) -> None:
        pass  # an unfinished upload is never an object: aborted by a scan of its prefix (abort_stale_uploads)

    def remove(self) -> None:
        try:
            self.path.filesystem().rm_file(self.path.key)
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001 - each backend's errors, mapped
            raise store_error(self.path, exc, writing=True) from None

    def check_output(self, source: Store, option: str) -> None:
        if self.path == source.path:
            raise OutputPathError(
                f"{self.path}: is the input object itself; the input is never overwritten, choose another {option}"
            )  # its bucket is checked by the upload

    def is_file(self, out: Path, out_resolved: Path) -> bool:
        return False

    def _entry(self) -> dict[str, Any] | None:
        """The store's current entry here (not a cached listing), or None when nothing is here."""
        fs = self.path.filesystem()
        try:
            fs.invalidate_cache(self.path.key)
            return dict(fs.info(self.path.key))
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
            raise store_error(self.path, exc) from None

    def kind(self) -> str | None:
        entry = self._entry()
        if entry is None:
            return None
        return "folder" if entry.get("type") == "directory" else "file"

    def files(self) -> list[Entry]:
        prefix = self.path
        return [
            Entry(p.key[len(prefix.key) :].strip("/"), p, False, _object_ns(entry))
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
            newest = max(seen.newest or 0 if seen else 0, _object_ns(entry))
            folder = bool(sep) or (seen is not None and seen.is_folder)
            found[name] = Entry(name, self.path.joinpath(name), folder, newest)
        return [found[name] for name in sorted(found)]

    def listed(self) -> dict[str, Version]:
        fs = self.path.filesystem()
        try:
            fs.invalidate_cache(self.path.key)
            entries = fs.ls(self.path.key, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as exc:  # noqa: BLE001
            raise store_error(self.path, exc) from None
        found = {}
        for entry in entries:
            name = posixpath.basename(str(entry["name"]).rstrip("/"))
            if entry.get("type", "file") == "file" and name and not name.startswith("."):
                found[name] = _listed_version(entry)
        return found

    def listed_version(self) -> Version | None:
        entry = self._entry()
        return None if entry is None or entry.get("type") == "directory" else _listed_version(entry)

    def remove_orphans_under(self, writers_stopped: bool = False) -> list[Location]:
        return list(abort_stale_uploads(self.path, older_than=0 if writers_stopped else STALE_UPLOAD_SECONDS))

    def resolve(self) -> Location:
        return self.path

    def absolute(self) -> Location:
        return self.path

    def spool_folder(self) -> Path | None:
        return None  # this machine's temporary folder


def _resolved(path: Path, what: str) -> Path:
    try:
        return path.resolve(strict=False)
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a symlink loop
        if what == "input":
            raise InvalidBatchError(f"{path}: symbolic link loop; point the path at a real file") from None
        raise OutputPathError(f"{path}: symbolic link loop; choose another {what}") from None


class DiskStore:
    """A local file (or folder), behind the interface of :class:`Store`."""

    options: Mapping[str, Any] = {}
    folder_noun = "directory"

    def __init__(self, path: Path) -> None:
        self.path = path

    def version(self) -> Version:
        return Version.of_file(os.stat(self.path))

    @contextlib.contextmanager
    def reading(self) -> Iterator[tuple[Version, Callable[[int], bytes]]]:
        with open_input(self.path) as fh:

            def read(n: int) -> bytes:
                try:
                    return fh.read(n)
                except OSError as exc:
                    raise read_error(self.path, exc) from None

            yield Version.of_file(os.fstat(fh.fileno())), read

    def read_span(self, version: Version, start: int, end: int, before: bytes = b"", after: bytes = b"") -> bytearray:
        return files.read_span(self.path, version, start, end, before, after)

    def open(self, block_size: int = UPLOAD_PART_BYTES) -> BinaryIO:
        return open(self.path, "rb")  # noqa: SIM115 - the caller closes it

    def size(self) -> int:
        return os.stat(self.path).st_size

    def stage(self, token: str | None = None) -> Staged:
        return StagedFile(self.path, temporary_name(self.path, token))

    def part(self, token: str, number: int) -> str | None:
        return str(temporary_name(self.path, token, number))

    def remove_orphans_beside(self) -> None:
        remove_orphans(self.path.parent)

    def remove(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def check_output(self, source: Store, option: str) -> None:
        out = self.path
        same = source.is_file(out, _resolved(out, option))  # (a local output of an object is checked for itself only)
        if out.is_dir():  # first: the input may be a folder (of pages), and no folder can be written
            raise OutputPathError(f"{out}: is a directory; give a file path for the output")
        if same:
            raise OutputPathError(
                f"{out}: is the input file itself; the input is never overwritten, choose another {option}"
            )
        parent = out.parent
        if not parent.is_dir():
            raise OutputPathError(f"{out}: the directory {parent} does not exist; create it first")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputPathError(f"{out}: the directory {parent} is not writable; choose another {option}")

    def is_file(self, out: Path, out_resolved: Path) -> bool:
        inp, inp_resolved = self.path, _resolved(self.path, "input")
        try:
            return out_resolved == inp_resolved or (out.exists() and inp.exists() and os.path.samefile(inp, out))
        except OSError:
            return out_resolved == inp_resolved

    def kind(self) -> str | None:
        if self.path.is_dir():
            return "folder"
        return "file" if self.path.exists() else None

    def files(self) -> list[Entry]:
        root = self.path
        if not root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not an existing directory", str(root))
        found: list[Entry] = []
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=_raise):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if not name.startswith("."):
                    file = Path(dirpath) / name
                    found.append(Entry(file.relative_to(root).as_posix(), file))
        found.sort(key=lambda entry: entry.relative)
        return found

    def children(self) -> list[Entry]:
        return [
            Entry(name, self.path / name, (self.path / name).is_dir())
            for name in sorted(os.listdir(self.path))
            if not name.startswith(".")
        ]

    def listed(self) -> dict[str, Version]:
        try:
            with os.scandir(self.path) as entries:
                return {
                    e.name: Version.of_file(e.stat())
                    for e in entries
                    if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
                }
        except (FileNotFoundError, NotADirectoryError):
            return {}

    def listed_version(self) -> Version | None:
        try:
            return Version.of_file(os.stat(self.path))
        except FileNotFoundError:
            return None

    def remove_orphans_under(self, writers_stopped: bool = False) -> list[Location]:
        removed: list[Location] = []
        for dirpath, dirnames, filenames in os.walk(self.path, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if any(name.endswith(TMP_SUFFIX) for name in filenames):
                removed.extend(remove_orphans(dirpath))
        return removed

    def resolve(self) -> Location:
        return self.path.resolve()

    def absolute(self) -> Location:
        return self.path.expanduser().absolute()

    def spool_folder(self) -> Path | None:
        return self.path.parent


def _raise(exc: OSError) -> None:
    raise exc


def store(p: Location) -> Store:
    """The store that holds ``p``, bound to it: where the backend is chosen, once."""
    return ObjectStore(p) if isinstance(p, ObjectPath) else DiskStore(p)


def write_atomic(target: str | os.PathLike[str] | ObjectPath, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` to ``target`` atomically: a reader sees the previous file or the complete new one.

    Raises:
        OutputPathError: permission denied or read-only file system.
        WriteError: disk full or another I/O error; nothing was written.
    """
    write_atomic_group([(location(target, None, "output"), data)])


def remove_orphans_beside(targets: Iterable[Location]) -> None:
    """Remove the staged files whose writer is gone beside these outputs, once a folder."""
    for _, target in sorted({str(t.parent): t for t in targets}.items()):
        store(target).remove_orphans_beside()


def write_atomic_group(items: Sequence[tuple[Location, bytes | Iterable[bytes]]]) -> None:
    """Write several files (or objects): all are staged, then renamed (uploads completed) in order; only a failed
    rename leaves the earlier ones."""
    staged: list[Staged] = []
    try:
        remove_orphans_beside(target for target, _ in items)
        for target, data in items:
            staged.append(store(target).stage())
            staged[-1].write_all([data] if isinstance(data, bytes) else data)
    except BaseException:
        for done in staged:
            done.discard()
        raise
    commit_in_order(staged)
