"""An output object uploaded as it is written and made visible last, and the sweep of the unfinished uploads that
killed writers leave."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from selection_storage.atomic import Staged
from selection_storage.stores.entries import modified
from selection_storage.stores.failures import store_error
from selection_storage.stores.urls import ObjectPath

#: An unfinished upload older than this is taken for one whose writer died (a live one cannot be told apart).
STALE_UPLOAD_SECONDS: Final[int] = 3600


class StagedObject(Staged):
    """An output object uploaded as it is written and made visible only by :meth:`commit` (the store completes the
    upload last); :meth:`discard` (or any failure) aborts it, so nothing appears."""

    def __init__(self, target: ObjectPath) -> None:
        self.target, self._committed = target, False
        try:
            self._fh: Any = target.backend.upload(target.filesystem(), target.key)
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


def abort_stale_uploads(
    prefix: ObjectPath,
    now: float | None = None,
    older_than: float = STALE_UPLOAD_SECONDS,
    stopped: Callable[[str], bool] | None = None,
    started_before: float | None = None,
) -> list[ObjectPath]:
    """Abort the unfinished uploads under ``prefix`` started ``older_than`` seconds or more ago (a killed writer's:
    never an object, but stored and billed), and those of any age whose key under the prefix ``stopped`` says the
    caller knows the writer of (it has stopped), if started before ``started_before`` (the store's time; None: any
    time); the objects they were for. Never raises. (S3: its multipart
    uploads; Azure: the blobs that have uncommitted blocks only; Google Cloud Storage cannot list its resumable
    uploads.)"""
    fs = prefix.filesystem()
    bucket, _, key_prefix = prefix.key.partition("/")
    now = time.time() if now is None else now

    head = key_prefix.rstrip("/") + "/" if key_prefix else ""

    def stale(key: str, started: Any) -> bool:
        if key != key_prefix and not key.startswith(head):
            return False
        at = modified({"LastModified": started})
        known = started_before is None or at < started_before
        return now - at >= older_than or (stopped is not None and known and stopped(key[len(head) :]))

    try:
        keys = prefix.backend.abort_uploads(fs, bucket, key_prefix, stale)
    except Exception:  # noqa: BLE001 - a sweep that fails is tried again by the next scan
        return []
    return [ObjectPath(prefix.protocol, f"{bucket}/{key}", prefix.options) for key in keys]
