"""Batches in object storage, against a real S3-protocol server (moto's, on loopback) through the real s3fs client.

The same bytes as on a disk; an output object that appears whole or not at all; the input never written and a
change of it noticed; every fault one line, nothing written.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from selection_cli.main import main
from selection_core.errors import (
    InvalidBatchError,
    OutputPathError,
    ReadError,
    ServiceUnavailableError,
    UnsafePathError,
)
from selection_engine import select_file
from selection_storage import find_stale_batches
from selection_storage.files import InputChangedError
from selection_storage.paths import resolve_run_paths
from selection_storage.stores import STALE_UPLOAD_SECONDS, ObjectPath, ObjectStore, abort_stale_uploads, location, store
from tests.support import ROOT
from tests.support.prefect_fixtures import make_batch

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

pytestmark = pytest.mark.slow


def _put(s3_server, url: str, data: bytes) -> None:
    s3_server.fs().pipe_file(url.removeprefix("s3://"), data)


def _get(s3_server, url: str) -> bytes:
    return s3_server.fs().cat_file(url.removeprefix("s3://"))


def _keys(s3_server, bucket: str) -> list[str]:
    return sorted(s3_server.fs().find(bucket))


def test_select_on_s3_writes_the_bytes_select_writes_on_a_disk(s3_server, bucket, tmp_path) -> None:
    data = GOLDEN_BATCH.read_bytes()
    _put(s3_server, f"s3://{bucket}/in/aeb_extracted.json", data)
    etag = s3_server.fs().info(f"{bucket}/in/aeb_extracted.json")["ETag"]
    local = select_file(GOLDEN_BATCH, tmp_path / "out_selected.json", tmp_path / "report.jsonl")

    remote = select_file(
        f"s3://{bucket}/in/aeb_extracted.json", report_path=f"s3://{bucket}/in/report.jsonl", chunk_articles=20
    )

    assert str(remote.output_path) == f"s3://{bucket}/in/aeb_extracted_selected.json"
    output = _get(s3_server, str(remote.output_path))
    assert output == (tmp_path / "out_selected.json").read_bytes()
    assert _get(s3_server, f"s3://{bucket}/in/report.jsonl") == (tmp_path / "report.jsonl").read_bytes()
    assert remote.output_sha256 == local.output_sha256 == hashlib.sha256(output).hexdigest()
    assert remote.input_sha256 == local.input_sha256 and remote.chunks == 10
    assert s3_server.fs().info(f"{bucket}/in/aeb_extracted.json")["ETag"] == etag  # the input is never written
    assert _keys(s3_server, bucket) == [
        f"{bucket}/in/aeb_extracted.json",
        f"{bucket}/in/aeb_extracted_selected.json",
        f"{bucket}/in/report.jsonl",
    ]
    assert s3_server.uploads(bucket) == []


def test_a_large_output_is_a_multipart_upload_completed_last(s3_server, bucket, tmp_path, mocker) -> None:
    batch = json.dumps(make_batch(16000)).encode()  # about 11 MB out: more than one part of 8 MiB
    _put(s3_server, f"s3://{bucket}/big_extracted.json", batch)
    import s3fs

    completed = mocker.spy(s3fs.core.S3File, "commit")
    result = select_file(f"s3://{bucket}/big_extracted.json")
    assert completed.call_count == 1 and result.output_size > 8 << 20
    (tmp_path / "big_extracted.json").write_bytes(batch)
    assert (
        _get(s3_server, str(result.output_path))
        == select_file(tmp_path / "big_extracted.json").output_path.read_bytes()
    )
    assert s3_server.uploads(bucket) == []


def test_a_failed_upload_is_aborted_and_leaves_no_object(s3_server, bucket, mocker) -> None:
    batch = json.dumps(make_batch(16000)).encode()
    _put(s3_server, f"s3://{bucket}/big_extracted.json", batch)
    import s3fs

    mocker.patch.object(s3fs.core.S3File, "commit", side_effect=OSError(5, "injected: the completion failed"))
    with pytest.raises(Exception, match="nothing was written"):
        select_file(f"s3://{bucket}/big_extracted.json")
    assert _keys(s3_server, bucket) == [f"{bucket}/big_extracted.json"]
    assert s3_server.uploads(bucket) == []  # the parts already uploaded were aborted


@pytest.mark.parametrize(
    ("input_url", "output_url", "error", "words"),
    [
        pytest.param("s3://{b}/missing_extracted.json", None, InvalidBatchError, "no such object", id="missing-key"),
        pytest.param("s3://no-such-bucket-cs/x_extracted.json", None, InvalidBatchError, "no such", id="no-bucket"),
        pytest.param(
            "s3://{b}/in_extracted.json", "s3://no-such-bucket-cs/o.json", OutputPathError, "bucket", id="out-bucket"
        ),
        pytest.param("s3://{b}/in_extracted.json", "s3://{b}/in_extracted.json", OutputPathError, "input", id="self"),
    ],
)
def test_bad_places_are_one_line_and_nothing_is_written(s3_server, bucket, input_url, output_url, error, words) -> None:
    _put(s3_server, f"s3://{bucket}/in_extracted.json", GOLDEN_BATCH.read_bytes())
    with pytest.raises(error, match=words) as caught:
        select_file(input_url.format(b=bucket), output_url and output_url.format(b=bucket))
    assert "\n" not in str(caught.value)
    assert _keys(s3_server, bucket) == [f"{bucket}/in_extracted.json"] and s3_server.uploads(bucket) == []


def test_access_denied_is_one_line_naming_the_fix(s3_server, bucket, mocker) -> None:
    _put(s3_server, f"s3://{bucket}/in_extracted.json", GOLDEN_BATCH.read_bytes())
    import s3fs

    # moto does not check signatures: the fault is injected where s3fs turns AccessDenied into PermissionError
    mocker.patch.object(s3fs.S3FileSystem, "_info", side_effect=PermissionError("Access Denied"))
    with pytest.raises(InvalidBatchError, match="access denied by the store; check its credentials") as caught:
        select_file(f"s3://{bucket}/in_extracted.json", storage_options={"secret": "s3cr3t-value"})
    assert "s3cr3t" not in str(caught.value)


def test_an_input_changed_during_the_run_is_refused_and_nothing_is_written(s3_server, bucket) -> None:
    url = f"s3://{bucket}/in_extracted.json"
    _put(s3_server, url, GOLDEN_BATCH.read_bytes())
    seen: list[int] = []

    def rewrite_once(done: int, total: int) -> None:
        if not seen:
            _put(s3_server, url, GOLDEN_BATCH.read_bytes().replace(b"the", b"THE", 1))
        seen.append(done)

    with pytest.raises(InputChangedError, match="changed while it was being read"):
        select_file(url, chunk_articles=20, progress=rewrite_once)
    assert _keys(s3_server, bucket) == [f"{bucket}/in_extracted.json"] and s3_server.uploads(bucket) == []


def _sent(url: str) -> list[tuple[str, dict[str, str]]]:
    """The requests (method, headers) the client that ``select`` uses for ``url`` sends from now on, as botocore
    hands them to the network."""
    sent: list[tuple[str, dict[str, str]]] = []

    def record(request, **_) -> None:
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        sent.append((request.method, headers))

    location(url).filesystem().s3.meta.events.register("before-send.s3", record)  # fsspec's instance: the run's
    return sent


def test_each_chunk_is_read_by_one_ranged_get_on_the_version_planned(s3_server, bucket, mocker) -> None:
    url = f"s3://{bucket}/in_extracted.json"
    _put(s3_server, url, GOLDEN_BATCH.read_bytes())
    sent, per_read = _sent(url), []
    real = ObjectStore.read_span

    def read_span(self, *args, **kwargs):
        start = len(sent)
        try:
            return real(self, *args, **kwargs)
        finally:
            per_read.append(sent[start:])

    mocker.patch.object(ObjectStore, "read_span", read_span)
    result = select_file(url, chunk_articles=20)
    etag = s3_server.fs().info(url.removeprefix("s3://"))["ETag"]
    assert result.chunks == len(per_read) == 10
    for requests in per_read:  # no HEAD, no second GET: one request a chunk
        ((method, headers),) = requests
        assert method == "GET" and headers["If-Match"] == etag and headers["Range"].startswith("bytes=")


def test_a_chunk_of_an_object_rewritten_after_the_plan_is_refused_by_its_one_get(s3_server, bucket) -> None:
    url = f"s3://{bucket}/in_extracted.json"
    data = GOLDEN_BATCH.read_bytes()
    _put(s3_server, url, data)
    planned = store(location(url))
    version = planned.version()
    assert planned.read_span(version, 10, 30, b"<", b">") == b"<" + data[10:30] + b">"
    _put(s3_server, url, data.replace(b"the", b"THE", 1))  # the same size: only the ETag tells
    sent = _sent(url)
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        planned.read_span(version, 10, 30)
    assert [method for method, _ in sent] == ["GET"]


def test_the_server_stopped_mid_read_is_one_transient_line_and_nothing_is_written(s3_server, bucket) -> None:
    url = f"s3://{bucket}/in_extracted.json"
    _put(s3_server, url, GOLDEN_BATCH.read_bytes())
    stopped: list[bool] = []

    def stop_once(done: int, total: int) -> None:
        if not stopped:
            s3_server.stop()
            stopped.append(True)

    quick = {"config_kwargs": {"retries": {"max_attempts": 1}}}  # the storage options reach botocore
    try:
        with pytest.raises(ServiceUnavailableError, match="the store cannot be reached .*run again") as caught:
            select_file(url, chunk_articles=20, progress=stop_once, storage_options=quick)
    finally:
        if stopped:
            s3_server.start()
    assert caught.value.transient and "\n" not in str(caught.value)
    assert _keys(s3_server, bucket) == [f"{bucket}/in_extracted.json"] and s3_server.uploads(bucket) == []


def test_sigkill_during_the_upload_leaves_no_object_and_no_partial(s3_server, bucket) -> None:
    url = f"s3://{bucket}/big_extracted.json"
    _put(s3_server, url, json.dumps(make_batch(40000)).encode())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "selection_cli.main", "select", url], env=env, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while not s3_server.uploads(bucket):  # a part is being uploaded: the output is half written
            assert child.poll() is None and time.monotonic() < deadline, "the upload never started"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        child.kill()
    assert _keys(s3_server, bucket) == [f"{bucket}/big_extracted.json"]  # no output, no temporary object
    # The unfinished upload is no object; the scheduled scan aborts it once it is an hour old (moto reports a fixed
    # start date for every upload, so the ages are counted from the date it reports).
    (upload,) = s3_server.uploads(bucket)
    started = upload["Initiated"].timestamp()
    prefix = ObjectPath("s3", bucket)
    assert abort_stale_uploads(prefix, now=started + 60) == []  # it may still be alive
    later = started + STALE_UPLOAD_SECONDS
    assert abort_stale_uploads(ObjectPath("s3", f"{bucket}/elsewhere"), now=later) == []
    assert abort_stale_uploads(prefix, now=later) == [ObjectPath("s3", f"{bucket}/big_extracted_selected.json")]
    assert s3_server.uploads(bucket) == [] and _keys(s3_server, bucket) == [f"{bucket}/big_extracted.json"]


def test_the_scan_of_a_prefix_finds_the_stale_batches_by_modification_time(s3_server, bucket) -> None:
    data = GOLDEN_BATCH.read_bytes()
    for key in ("a/one_extracted.json", "a/b/two_extracted.jsonl", "done_extracted.json", ".hidden/x_extracted.json"):
        _put(s3_server, f"s3://{bucket}/batches/{key}", data)
    _put(s3_server, f"s3://{bucket}/batches/done_extracted_selected.json", b"{}")
    _put(s3_server, f"s3://{bucket}/elsewhere_extracted.json", data)

    stale = find_stale_batches(f"s3://{bucket}/batches/")

    assert [str(p) for p in stale] == [
        f"s3://{bucket}/batches/a/b/two_extracted.jsonl",
        f"s3://{bucket}/batches/a/one_extracted.json",
    ]


def test_paths_outside_an_object_data_root_are_refused_before_anything_is_read(s3_server, bucket) -> None:
    root = f"s3://{bucket}/batches/"
    paths = resolve_run_paths("day1/x_extracted.json", data_root=root)
    assert paths.input == ObjectPath("s3", f"{bucket}/batches/day1/x_extracted.json")
    assert str(paths.output) == f"s3://{bucket}/batches/day1/x_extracted_selected.json"
    for outside in (
        f"s3://other-{bucket}/batches/x_extracted.json",
        f"s3://{bucket}/batchesX/x_extracted.json",
        f"s3://{bucket}/batches/../x_extracted.json",
        "/etc/x_extracted.json",
        f"gs://{bucket}/batches/x_extracted.json",
    ):
        with pytest.raises(UnsafePathError):
            resolve_run_paths(outside, data_root=root, require_data_root=True)


def test_the_command_line_takes_urls_and_storage_options(s3_server, bucket, tmp_path, capsys, monkeypatch) -> None:
    _put(s3_server, f"s3://{bucket}/in_extracted.json", GOLDEN_BATCH.read_bytes())
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # the endpoint from --storage-option alone
    code = main(
        ["select", f"s3://{bucket}/in_extracted.json", "-o", str(tmp_path / "o_selected.json"),
         "--storage-option", f"endpoint_url={s3_server.endpoint}", "--storage-option", "use_ssl=false"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "o_selected.json").read_bytes() == select_file(
        GOLDEN_BATCH, tmp_path / "l.json"
    ).output_path.read_bytes()

    code = main(["explain", f"s3://{bucket}/in_extracted.json", "--index", "3",
                 "--storage-option", f"endpoint_url={s3_server.endpoint}"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "in_extracted.json" in out and "article 3" in out.lower()

    assert (
        main(
            [
                "select",
                f"s3://{bucket}/nothing_extracted.json",
                "--storage-option",
                "endpoint_url=" + s3_server.endpoint,
            ]
        )
        == 65
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"content-selection: error: s3://{bucket}/nothing_extracted.json: no such object (or bucket); check the URL"
    ]


WARC = ROOT / "tests" / "data" / "warc" / "pages.warc.gz"


def test_extract_streams_a_warc_object_named_loosely_to_the_bytes_of_the_disk(s3_server, bucket, tmp_path) -> None:
    url = f"s3://{bucket}/crawls/crawl.warc.gz.bad"
    _put(s3_server, url, WARC.read_bytes())
    local = tmp_path / "crawl.warc.gz.bad"
    local.write_bytes(WARC.read_bytes())
    out = f"s3://{bucket}/batches/crawl_extracted.json"

    assert main(["extract", url, "-o", out, "--workers", "1"]) == 0
    assert main(["extract", str(local), "-o", str(tmp_path / "crawl_extracted.json"), "--workers", "1"]) == 0

    # the same bytes but for the input's name, which the batch records
    expected = (tmp_path / "crawl_extracted.json").read_bytes().replace(str(local).encode(), url.encode())
    assert _get(s3_server, out) == expected
    assert _keys(s3_server, bucket) == [f"{bucket}/batches/crawl_extracted.json", f"{bucket}/crawls/crawl.warc.gz.bad"]


def test_a_store_that_stops_mid_archive_fails_the_extraction_and_writes_nothing(s3_server, bucket, mocker) -> None:
    url = f"s3://{bucket}/crawls/crawl.warc.gz"
    _put(s3_server, url, WARC.read_bytes())
    import s3fs

    real = s3fs.core.S3File._fetch_range
    calls = []

    def drop_after_the_first(self, start, end):  # the connection dropped once the scan has begun
        calls.append(start)
        if len(calls) > 1:
            raise OSError(errno.EIO, "connection reset by peer (injected)")
        return real(self, start, end)

    mocker.patch.object(s3fs.core.S3File, "_fetch_range", drop_after_the_first)
    from selection_extraction import ExtractionSettings
    from selection_extraction.engine import extract_to_file

    with pytest.raises(ReadError, match="the store failed .*retry later"):
        extract_to_file(url, settings=ExtractionSettings(workers=1))
    assert _keys(s3_server, bucket) == [f"{bucket}/crawls/crawl.warc.gz"] and s3_server.uploads(bucket) == []
