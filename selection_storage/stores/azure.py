"""Azure Blob Storage (``az://``, ``abfs://``, through adlfs): ranged reads ``If-Match`` an etag, uploads as staged
blocks committed last, conditional writes ``If-None-Match: *`` and ``If-Match``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from selection_storage.stores.backend import UPLOAD_PART_BYTES, Backend, Changed, Tagged, timestamp


class BlockUpload:
    """adlfs commits a blob's block list when its file closes, so here the blocks are staged as they are written
    and the list is committed by :meth:`commit` alone. Blocks never committed are never part of a blob
    (:meth:`Azure.abort_uploads` deletes those of a killed writer; Azure drops any left after a week)."""

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
        # A blob's uncommitted blocks are deleted together: only when all of them are this upload's (a blob
        # committed meanwhile stays). Another writer's blocks stay for its commit; the sweep takes them when old.
        if staged and self._only_blocks_staged(set(staged)):
            Azure().abort_uploads(self._fs, self._container, self._blob, lambda key, _: key == self._blob)

    def _only_blocks_staged(self, staged: set[str]) -> bool:
        try:
            _, uncommitted = self._call("get_block_list", "uncommitted")
        except Exception:  # noqa: BLE001 - no blob, no blocks (or the store failed): nothing is deleted
            return False
        return {block.id for block in uncommitted} <= staged


@contextlib.asynccontextmanager
async def _blob(fs: Any, key: str) -> Any:
    container, _, blob = key.partition("/")
    async with fs.service_client.get_blob_client(container=container, blob=blob) as client:
        yield client


class Azure(Backend):
    extra = "azure"
    endpoint_setting = "connection_string, AZURE_STORAGE_CONNECTION_STRING"
    conditional = True
    tag_name = "etag"

    def endpoint(self, options: Mapping[str, Any]) -> str | None:
        text = str(options.get("connection_string") or os.environ.get("AZURE_STORAGE_CONNECTION_STRING") or "")
        fields = dict(part.partition("=")[::2] for part in text.split(";") if "=" in part)
        return fields.get("BlobEndpoint") or None

    async def read_range(self, fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
        if name != "etag":
            return None
        import errno

        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

        async with _blob(fs, key) as client:
            try:
                download = await client.download_blob(
                    offset=start, length=into.nbytes, etag=value, match_condition=MatchConditions.IfNotModified
                )
            except ResourceModifiedError:
                raise Changed from None
            except ResourceNotFoundError as exc:
                raise FileNotFoundError(errno.ENOENT, "no such object") from exc
            got = 0
            async for data in download.chunks():
                size = min(len(data), into.nbytes - got)
                into[got : got + size] = data[:size]
                got += len(data)
            return got

    def upload(self, fs: Any, key: str) -> Any:
        return BlockUpload(fs, key)

    def abort_uploads(self, fs: Any, bucket: str, key_prefix: str, stale: Callable[[str, Any], bool]) -> list[str]:
        """The blobs that have uncommitted blocks only (a blob committed meanwhile is kept: the delete is
        conditioned on the listed time)."""
        from fsspec.asyn import sync

        async def sweep() -> list[str]:
            container = fs.service_client.get_container_client(bucket)
            start = key_prefix or None
            committed = {blob.name async for blob in container.list_blobs(name_starts_with=start)}
            listed = [b async for b in container.list_blobs(name_starts_with=start, include=["uncommittedblobs"])]
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

    async def read_tagged(self, fs: Any, key: str) -> Tagged | None:
        from azure.core.exceptions import ResourceNotFoundError

        async with _blob(fs, key) as client:
            try:
                download = await client.download_blob()
            except ResourceNotFoundError:
                return None
            data = await download.readall()
            return Tagged(data, str(download.properties.etag), timestamp(download.properties.last_modified))

    async def write_if(
        self, fs: Any, key: str, data: bytes | BinaryIO, tag: str | None, size: int | None = None
    ) -> str | None:
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

        condition = {"overwrite": False} if tag is None else {
            "overwrite": True, "etag": tag, "match_condition": MatchConditions.IfNotModified}  # fmt: skip
        async with _blob(fs, key) as client:
            try:
                length = len(data) if isinstance(data, bytes) else size  # a file is sent in blocks, then committed
                response = await client.upload_blob(data, length=length, **condition)
            except (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError):
                return None
            return str(response["etag"])

    async def delete_if(self, fs: Any, key: str, tag: str) -> bool:
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceModifiedError, ResourceNotFoundError

        async with _blob(fs, key) as client:
            try:
                await client.delete_blob(etag=tag, match_condition=MatchConditions.IfNotModified)
            except (ResourceModifiedError, ResourceNotFoundError):
                return False
            return True
