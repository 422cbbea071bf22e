"""Files on a web server (``https://``, ``http://``, through fsspec's HTTP file system and its aiohttp session):
read only, as Common Crawl serves ``https://data.commoncrawl.org/``.

A file's version is what the server says of it: its ETag (a strong one), else its Last-Modified, with its size.
Every read after the first look is conditioned on that version (``If-Match``, or ``If-Unmodified-Since``), so a
file replaced while it is read is a 412 (:class:`Changed`), never a mix of two files. A server gives no listing:
a folder of files cannot be read from it, and nothing is written to it. An answer's status is kept on the error
(:class:`HTTPStatusError`), so that a 503 is retried and a 403 or 404 is not.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Mapping
from typing import Any, Final

from selection_core.errors import InvalidBatchError
from selection_storage.stores.backend import Backend, Changed, fill

#: HEADs in flight at once when many files' versions are asked for (:meth:`HTTP.entries`): a re-run of a whole
#: crawl asks for one per WARC done.
REQUESTS_AT_ONCE: Final[int] = 16

#: The statuses another try may cure: Common Crawl's "SlowDown" (503), throttling (429) and the gateway's errors.
TRANSIENT_STATUSES: Final[frozenset[int]] = frozenset({429, 500, 502, 503, 504})


class HTTPStatusError(OSError):
    """A server's answer that is not the file: its status, and an errno that says whether to try again (``EBUSY``
    for :data:`TRANSIENT_STATUSES`, ``ENOENT`` for 404 and 410, ``EACCES`` for 401 and 403, else ``EINVAL``)."""

    def __init__(self, status: int, reason: str | None) -> None:
        self.status = status
        code = (
            errno.EBUSY
            if status in TRANSIENT_STATUSES
            else errno.ENOENT
            if status in (404, 410)
            else errno.EACCES
            if status in (401, 403)
            else errno.EINVAL
        )
        super().__init__(code, f"the server answered {status} {reason or ''}".rstrip())


def _checked(response: Any) -> Any:
    """``response`` when it is a success; else its :class:`HTTPStatusError` (412: :class:`Changed`)."""
    if response.status == 412:
        raise Changed
    if response.status >= 400:
        raise HTTPStatusError(response.status, response.reason)
    return response


def _condition(name: str, value: str) -> dict[str, str]:
    """The header that makes a read one of the version tagged ``name:value``."""
    return {"If-Match": value} if name == "ETag" else {"If-Unmodified-Since": value}


class HTTP(Backend):
    extra = "http"
    endpoint_setting = "the URL"
    conditional = True
    writable = False
    listable = False

    def fs_path(self, protocol: str, key: str) -> str:
        return f"{protocol}://{key}"  # fsspec's HTTP file system takes the whole URL

    def entry(self, fs: Any, path: str) -> dict[str, Any] | None:
        """The file's size and version from a HEAD (fsspec's ``info`` takes any failure for a missing file)."""
        from fsspec.asyn import sync

        return sync(fs.loop, self._head, fs, path)

    async def _head(self, fs: Any, path: str) -> dict[str, Any] | None:
        session = await fs.set_session()
        async with session.head(path, allow_redirects=True) as response:
            if response.status in (404, 410):
                return None
            _checked(response)
            headers = response.headers
            size = headers.get("Content-Length")
            if size is None or headers.get("Content-Encoding", "identity") != "identity":
                raise InvalidBatchError(
                    f"{path}: the server gives no size of the file (no Content-Length, or a compressed answer), so "
                    "it cannot be read in ranges; give the URL of a file served as it is"
                )
            found: dict[str, Any] = {"name": path, "size": int(size), "type": "file"}
            etag = headers.get("ETag", "")
            if etag and not etag.startswith("W/"):  # a weak ETag matches no If-Match: the time is the version
                found["ETag"] = etag
            if headers.get("Last-Modified"):
                found["Last-Modified"] = headers["Last-Modified"]
            return found

    async def entries(self, fs: Any, paths: list[str]) -> list[dict[str, Any] | None | BaseException]:
        """:meth:`entry` of each path, :data:`REQUESTS_AT_ONCE` at a time; a failure is that path's result."""
        limit = asyncio.Semaphore(REQUESTS_AT_ONCE)

        async def one(path: str) -> dict[str, Any] | None:
            async with limit:
                return await self._head(fs, path)

        return await asyncio.gather(*(one(path) for path in paths), return_exceptions=True)

    def opened(self, fs: Any, path: str, entry: Mapping[str, Any], **how: Any) -> Any:
        """Read in ranges of the version ``entry`` tells, each ranged GET conditioned on it."""
        name = "ETag" if entry.get("ETag") else "Last-Modified"
        headers = _condition(name, entry[name]) if entry.get(name) else {}
        return fs.open(path, "rb", size=int(entry["size"]), headers=headers, **how)

    async def read_range(self, fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
        if name not in ("ETag", "Last-Modified"):
            return None
        session = await fs.set_session()
        headers = {"Range": f"bytes={start}-{start + into.nbytes - 1}", **_condition(name, value)}
        async with session.get(key, headers=headers) as response:
            if _checked(response).status != 206:
                raise InvalidBatchError(
                    f"{key}: the server answered {response.status} to a Range request, not 206: it does not serve "
                    "parts of a file; give the URL of a server that does"
                )

            async def read(view: memoryview) -> int:
                data = await response.content.read(view.nbytes)
                view[: len(data)] = data
                return len(data)

            return await fill(into, read)
