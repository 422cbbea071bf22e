"""Conditional writes of one small file or object: created only where nothing is, replaced or deleted only while
it is still the version read (its tag).

An object store evaluates the condition on the write itself: S3 ``If-None-Match: *`` and ``If-Match: <ETag>``
(PutObject, DeleteObject), Google Cloud Storage ``ifGenerationMatch`` (``0``: no object), Azure ``If-None-Match: *``
and ``If-Match: <etag>``. A Google Cloud Storage object is sent in one ``uploadType=multipart`` request, the upload
whose condition fake-gcs-server checks (it ignores it on a ``media`` upload); a delete there reads the generation
first, as fake-gcs-server ignores the condition of a delete (on it, the moment between the two is unguarded).

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
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Protocol

import orjson

from selection_core.errors import OutputPathError, SelectionError
from selection_storage.atomic import StagedFile, write_error
from selection_storage.files import read_error
from selection_storage.stores import Location, ObjectPath, backend, store_error


@dataclass(frozen=True)
class Tagged:
    """A file's bytes, the tag of that version (an ETag, a generation; a file's SHA-256), and when it was written
    (seconds since the epoch, as the store tells it)."""

    data: bytes
    tag: str
    modified: float


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
            _sync_folder(self.path.parent)
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


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class ConditionalObject:
    """An object in S3, Google Cloud Storage or Azure Blob Storage (see the module's note)."""

    def __init__(self, path: ObjectPath) -> None:
        self.path = path
        self._fs = path.filesystem()
        operations = _OPERATIONS.get(backend(self._fs))
        if operations is None:
            raise OutputPathError(
                f"{path}: this store cannot write an object on a condition; use s3://, gs:// or az://"
            )
        self._read, self._write, self._delete = operations

    def _run(self, operation: Callable[..., Any], writing: bool, *args: Any) -> Any:
        from fsspec.asyn import sync

        try:
            return sync(self._fs.loop, operation, self._fs, self.path.key, *args)
        except Exception as exc:  # noqa: BLE001 - every store failure becomes one typed line
            raise store_error(self.path, exc, writing) from None

    def read_tagged(self) -> Tagged | None:
        result: Tagged | None = self._run(self._read, False)
        return result

    def create_exclusive(self, data: bytes) -> str | None:
        result: str | None = self._run(self._write, True, data, None)
        return result

    def replace_if(self, data: bytes, tag: str) -> str | None:
        result: str | None = self._run(self._write, True, data, tag)
        return result

    def delete_if(self, tag: str) -> bool:
        return bool(self._run(self._delete, True, tag))


def _timestamp(value: datetime | str) -> float:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.timestamp()


#: The S3 errors of a condition that does not hold: another version (412), a concurrent conditional write (409),
#: no object to match.
_S3_REFUSED: Final[frozenset[str]] = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})


def _s3_refused(exc: BaseException) -> bool:
    response = getattr(exc.__cause__, "response", None) or {}  # s3fs raises botocore's error as the cause
    return response.get("Error", {}).get("Code") in _S3_REFUSED


async def _s3_read(fs: Any, key: str) -> Tagged | None:
    bucket, name, _ = fs.split_path(key)
    try:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=name)
    except FileNotFoundError:
        return None
    body = response["Body"]
    try:
        data = await body.read()
    finally:
        body.close()
    return Tagged(data, response["ETag"], _timestamp(response["LastModified"]))


async def _s3_write(fs: Any, key: str, data: bytes, tag: str | None) -> str | None:
    bucket, name, _ = fs.split_path(key)
    condition = {"IfNoneMatch": "*"} if tag is None else {"IfMatch": tag}
    try:
        response = await fs._call_s3("put_object", Bucket=bucket, Key=name, Body=data, **condition)
    except OSError as exc:
        if _s3_refused(exc):
            return None
        raise
    return str(response["ETag"])


async def _s3_delete(fs: Any, key: str, tag: str) -> bool:
    bucket, name, _ = fs.split_path(key)
    try:
        await fs._call_s3("delete_object", Bucket=bucket, Key=name, IfMatch=tag)
    except OSError as exc:
        if _s3_refused(exc):
            return False
        raise
    return True


async def _gcs_metadata(fs: Any, bucket: str, name: str) -> dict[str, Any] | None:
    try:
        metadata: dict[str, Any] = await fs._call("GET", "b/{}/o/{}", bucket, name, json_out=True)
    except FileNotFoundError:
        return None
    return metadata


async def _gcs_read(fs: Any, key: str) -> Tagged | None:
    bucket, name, _ = fs.split_path(key)
    while True:
        metadata = await _gcs_metadata(fs, bucket, name)
        if metadata is None:
            return None
        generation = str(metadata["generation"])
        try:  # that generation's bytes; gone (404) once it was replaced: read again
            _, data = await fs._call("GET", fs.url(f"{bucket}/{name}", generation=generation))
        except FileNotFoundError:
            continue
        return Tagged(bytes(data), generation, _timestamp(metadata["updated"]))


async def _gcs_write(fs: Any, key: str, data: bytes, tag: str | None) -> str | None:
    from urllib.parse import quote

    bucket, name, _ = fs.split_path(key)
    boundary = f"cs-{secrets.token_hex(16)}"
    head = f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
    part = f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n"
    body = b"".join([head.encode(), orjson.dumps({"name": name}), part.encode(), data, f"\r\n--{boundary}--".encode()])
    try:
        response = await fs._call(
            "POST",
            f"{fs._location}/upload/storage/v1/b/{quote(bucket, safe='')}/o",
            uploadType="multipart",
            ifGenerationMatch="0" if tag is None else tag,
            headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
            data=body,
            json_out=True,
        )
    except FileExistsError:  # gcsfs's name for 412: the condition does not hold
        return None
    return str(response["generation"])


async def _gcs_delete(fs: Any, key: str, tag: str) -> bool:
    bucket, name, _ = fs.split_path(key)
    metadata = await _gcs_metadata(fs, bucket, name)
    if metadata is None or str(metadata["generation"]) != tag:
        return False
    try:
        await fs._call("DELETE", "b/{}/o/{}", bucket, name, ifGenerationMatch=tag)
    except (FileExistsError, FileNotFoundError):
        return False
    return True


@contextlib.asynccontextmanager
async def _blob(fs: Any, key: str) -> Any:
    container, _, blob = key.partition("/")
    async with fs.service_client.get_blob_client(container=container, blob=blob) as client:
        yield client


async def _azure_read(fs: Any, key: str) -> Tagged | None:
    from azure.core.exceptions import ResourceNotFoundError

    async with _blob(fs, key) as client:
        try:
            download = await client.download_blob()
        except ResourceNotFoundError:
            return None
        data = await download.readall()
        return Tagged(data, str(download.properties.etag), _timestamp(download.properties.last_modified))


async def _azure_write(fs: Any, key: str, data: bytes, tag: str | None) -> str | None:
    from azure.core import MatchConditions
    from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

    condition = {"overwrite": False} if tag is None else {
        "overwrite": True, "etag": tag, "match_condition": MatchConditions.IfNotModified}  # fmt: skip
    async with _blob(fs, key) as client:
        try:
            response = await client.upload_blob(data, length=len(data), **condition)
        except (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError):
            return None
        return str(response["etag"])


async def _azure_delete(fs: Any, key: str, tag: str) -> bool:
    from azure.core import MatchConditions
    from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

    async with _blob(fs, key) as client:
        try:
            await client.delete_blob(etag=tag, match_condition=MatchConditions.IfNotModified)
        except (ResourceModifiedError, ResourceNotFoundError):
            return False
        return True


#: Read, write (create when the tag is None) and delete, by :func:`~selection_storage.stores.backend`.
_OPERATIONS: Final[dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]]] = {
    "s3": (_s3_read, _s3_write, _s3_delete),
    "gcs": (_gcs_read, _gcs_write, _gcs_delete),
    "azure": (_azure_read, _azure_write, _azure_delete),
}
