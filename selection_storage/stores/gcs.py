"""Google Cloud Storage (``gs://``, through gcsfs): ranged reads of one ``generation``, conditional writes
``ifGenerationMatch`` (``0``: no object).

An object written on a condition is sent in one ``uploadType=multipart`` request, the upload whose condition
fake-gcs-server checks (it ignores it on a ``media`` upload); a delete reads the generation first, as
fake-gcs-server ignores the condition of a delete (on it, the moment between the two is unguarded). Its resumable
uploads cannot be listed: an unfinished one is never an object, and expires after a week.

Every request goes through ``_call``, the coroutine of gcsfs's public ``call`` (fsspec's convention for an async
filesystem's methods): gcsfs's headers, credentials, ``requester_pays`` and endpoint apply.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import Any, BinaryIO

import orjson

from selection_storage.stores.backend import Backend, Changed, Tagged, timestamp


class GCS(Backend):
    extra = "gcs"
    endpoint_setting = "endpoint_url, STORAGE_EMULATOR_HOST"
    conditional = True
    tag_name = "generation"

    def endpoint(self, options: Mapping[str, Any]) -> str | None:
        return options.get("endpoint_url") or os.environ.get("STORAGE_EMULATOR_HOST") or None

    def filesystem_class(self, protocol: str, options: Mapping[str, Any]) -> type:
        """Behind an emulator (an endpoint set), gcsfs's plain HTTP client: its default class first asks the
        bucket's type over gRPC, which an HTTP emulator never answers, and waits 60 s for each call before it falls
        back."""
        import logging

        # gcsfs logs each failed request's traceback before it raises: the raised error is reported, in one line
        if not logging.getLogger("gcsfs").handlers:
            logging.getLogger("gcsfs").addHandler(logging.NullHandler())
        if self.endpoint(options) is not None:
            from gcsfs.core import GCSFileSystem

            return GCSFileSystem
        return super().filesystem_class(protocol, options)

    async def read_range(self, fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
        if name != "generation":
            return None
        # that generation's bytes, or 404 once it is gone (overwritten, deleted): as S3's VersionId
        bucket, path, _ = fs.split_path(key)
        range_header = {"Range": f"bytes={start}-{start + into.nbytes - 1}"}
        try:
            _, data = await fs._call("GET", fs.url(f"{bucket}/{path}", generation=value), headers=range_header)
        except (FileNotFoundError, FileExistsError):  # gcsfs's names for 404 and 412
            raise Changed from None
        into[: len(data)] = data
        return len(data)

    async def _metadata(self, fs: Any, bucket: str, name: str) -> dict[str, Any] | None:
        try:
            metadata: dict[str, Any] = await fs._call("GET", "b/{}/o/{}", bucket, name, json_out=True)
        except FileNotFoundError:
            return None
        return metadata

    async def read_tagged(self, fs: Any, key: str) -> Tagged | None:
        bucket, name, _ = fs.split_path(key)
        while True:
            metadata = await self._metadata(fs, bucket, name)
            if metadata is None:
                return None
            generation = str(metadata["generation"])
            try:  # that generation's bytes; gone (404) once it was replaced: read again
                _, data = await fs._call("GET", fs.url(f"{bucket}/{name}", generation=generation))
            except FileNotFoundError:
                continue
            return Tagged(bytes(data), generation, timestamp(metadata["updated"]))

    async def write_if(
        self, fs: Any, key: str, data: bytes | BinaryIO, tag: str | None, size: int | None = None
    ) -> str | None:
        from urllib.parse import quote

        if not isinstance(data, bytes):  # one multipart request: the object is held while it is sent
            data = data.read(size)

        bucket, name, _ = fs.split_path(key)
        boundary = f"cs-{secrets.token_hex(16)}"
        head = f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n"
        part = f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n"
        body = b"".join(
            [head.encode(), orjson.dumps({"name": name}), part.encode(), data, f"\r\n--{boundary}--".encode()]
        )
        try:
            response = await fs._call(
                "POST",
                fs.base.replace("/storage/v1/", "/upload/storage/v1/", 1) + f"b/{quote(bucket, safe='')}/o",
                uploadType="multipart",
                ifGenerationMatch="0" if tag is None else tag,
                headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
                data=body,
                json_out=True,
            )
        except FileExistsError:  # gcsfs's name for 412: the condition does not hold
            return None
        return str(response["generation"])

    async def delete_if(self, fs: Any, key: str, tag: str) -> bool:
        bucket, name, _ = fs.split_path(key)
        metadata = await self._metadata(fs, bucket, name)
        if metadata is None or str(metadata["generation"]) != tag:
            return False
        try:
            await fs._call("DELETE", "b/{}/o/{}", bucket, name, ifGenerationMatch=tag)
        except (FileExistsError, FileNotFoundError):
            return False
        return True
