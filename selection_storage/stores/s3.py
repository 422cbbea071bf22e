"""Amazon S3 and S3-compatible stores (``s3://``, through s3fs): ranged reads ``If-Match`` an ETag (or of a
``VersionId``), multipart uploads, conditional writes ``If-None-Match: *`` and ``If-Match``.

Every request goes through s3fs's ``_call_s3``, fsspec's convention for an async filesystem's own coroutines:
s3fs's client, credentials, endpoint and retries apply.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, Final

from selection_storage.stores.backend import Backend, Changed, Tagged, fill, timestamp

#: The S3 errors of a condition that does not hold: another version (412), a concurrent conditional write (409),
#: no object to match.
_REFUSED: Final[frozenset[str]] = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})


def _code(exc: BaseException) -> str | None:
    response = getattr(exc.__cause__, "response", None) or {}  # s3fs raises botocore's error as the cause
    return response.get("Error", {}).get("Code")


class S3(Backend):
    extra = "s3"
    endpoint_setting = "endpoint_url, AWS_ENDPOINT_URL"
    conditional = True
    tag_name = "ETag"

    def endpoint(self, options: Mapping[str, Any]) -> str | None:
        kwargs = options.get("client_kwargs") or {}
        return options.get("endpoint_url") or kwargs.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL") or None

    async def read_range(self, fs: Any, key: str, name: str, value: str, start: int, into: memoryview) -> int | None:
        conditions = {"ETag": "IfMatch", "VersionId": "VersionId"}
        if name not in conditions:
            return None
        bucket, key, _ = fs.split_path(key)
        ranged = {"Range": f"bytes={start}-{start + into.nbytes - 1}", conditions[name]: value}
        try:
            response = await fs._call_s3("get_object", Bucket=bucket, Key=key, **ranged)
        except OSError as exc:
            if _code(exc) in ("PreconditionFailed", "412") or (
                name == "VersionId" and isinstance(exc, FileNotFoundError)
            ):
                raise Changed from None  # another ETag; or the version read is gone
            raise
        body = response["Body"]
        try:
            return await fill(into, body.readinto)
        finally:
            body.close()

    def abort_uploads(self, fs: Any, bucket: str, key_prefix: str, stale: Callable[[str, Any], bool]) -> list[str]:
        aborted: list[str] = []
        for upload in _uploads_under(fs, bucket, key_prefix):
            if stale(upload["Key"], upload["Initiated"]):
                fs.abort_mpu(bucket, upload["Key"], upload["UploadId"])
                aborted.append(upload["Key"])
        return aborted

    async def read_tagged(self, fs: Any, key: str) -> Tagged | None:
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
        return Tagged(data, response["ETag"], timestamp(response["LastModified"]))

    async def write_if(
        self, fs: Any, key: str, data: bytes | BinaryIO, tag: str | None, size: int | None = None
    ) -> str | None:
        bucket, name, _ = fs.split_path(key)  # a file is streamed by the client (one PutObject: 5 GiB at most)
        condition = {"IfNoneMatch": "*"} if tag is None else {"IfMatch": tag}
        try:
            response = await fs._call_s3("put_object", Bucket=bucket, Key=name, Body=data, **condition)
        except OSError as exc:
            if _code(exc) in _REFUSED:
                return None
            raise
        return str(response["ETag"])

    async def delete_if(self, fs: Any, key: str, tag: str) -> bool:
        bucket, name, _ = fs.split_path(key)
        try:
            await fs._call_s3("delete_object", Bucket=bucket, Key=name, IfMatch=tag)
        except OSError as exc:
            if _code(exc) in _REFUSED:
                return False
            raise
        return True


def _uploads_under(fs: Any, bucket: str, key_prefix: str) -> Iterator[dict[str, Any]]:
    """The unfinished multipart uploads of ``bucket`` under ``key_prefix``, page after page (S3 gives at most 1,000
    a page, in key order: in a shared bucket, this prefix's may be far beyond the first page)."""
    page: dict[str, Any] = {"Bucket": bucket, "Prefix": key_prefix}
    while True:
        listed = fs.call_s3("list_multipart_uploads", **page)
        yield from sorted(listed.get("Uploads", []), key=lambda u: (u["Key"], u["UploadId"]))
        if not listed.get("IsTruncated"):
            return
        page |= {"KeyMarker": listed["NextKeyMarker"], "UploadIdMarker": listed["NextUploadIdMarker"]}
