"""Batches in object storage, on each store's real protocol on loopback through its real client (moto's S3 server
and s3fs, fake-gcs-server and gcsfs, Azurite and adlfs: ``tests/support/object_stores.py``).

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
from selection_storage.stores import ObjectPath, location, store
from selection_storage.stores.entries import object_version
from selection_storage.stores.objects import ObjectStore
from selection_storage.stores.uploads import STALE_UPLOAD_SECONDS, abort_stale_uploads
from tests.support import ROOT
from tests.support.object_stores import AZURITE_KEY
from tests.support.prefect_fixtures import make_batch

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

pytestmark = pytest.mark.slow


def test_select_in_a_store_writes_the_bytes_select_writes_on_a_disk(store_server, bucket, tmp_path) -> None:
    data = GOLDEN_BATCH.read_bytes()
    store_server.put(store_server.url(bucket, "in/aeb_extracted.json"), data)
    version = object_version(store_server.info(store_server.url(bucket, "in/aeb_extracted.json")))
    local = select_file(GOLDEN_BATCH, tmp_path / "out_selected.json", tmp_path / "report.jsonl")

    remote = select_file(
        store_server.url(bucket, "in/aeb_extracted.json"),
        report_path=store_server.url(bucket, "in/report.jsonl"),
        chunk_articles=20,
    )

    assert str(remote.output_path) == store_server.url(bucket, "in/aeb_extracted_selected.json")
    output = store_server.get(str(remote.output_path))
    assert output == (tmp_path / "out_selected.json").read_bytes()
    assert store_server.get(store_server.url(bucket, "in/report.jsonl")) == (tmp_path / "report.jsonl").read_bytes()
    assert remote.output_sha256 == local.output_sha256 == hashlib.sha256(output).hexdigest()
    assert remote.input_sha256 == local.input_sha256 and remote.chunks == 10
    assert object_version(store_server.info(store_server.url(bucket, "in/aeb_extracted.json"))) == version
    assert store_server.keys(bucket) == [
        f"{bucket}/in/aeb_extracted.json",
        f"{bucket}/in/aeb_extracted_selected.json",
        f"{bucket}/in/report.jsonl",
    ]
    assert store_server.no_uploads(bucket)


def test_a_large_output_is_uploaded_in_parts_and_completed_last(store_server, bucket, tmp_path, mocker) -> None:
    batch = json.dumps(make_batch(16000)).encode()  # about 11 MB out: more than one part of 8 MiB
    store_server.put(store_server.url(bucket, "big_extracted.json"), batch)
    completed = mocker.spy(store_server.upload_class, "commit")
    result = select_file(store_server.url(bucket, "big_extracted.json"))
    assert completed.call_count == 1 and result.output_size > 8 << 20
    (tmp_path / "big_extracted.json").write_bytes(batch)
    assert (
        store_server.get(str(result.output_path))
        == select_file(tmp_path / "big_extracted.json").output_path.read_bytes()
    )
    assert store_server.no_uploads(bucket)


def test_a_failed_upload_is_aborted_and_leaves_no_object(store_server, bucket, mocker) -> None:
    batch = json.dumps(make_batch(16000)).encode()
    store_server.put(store_server.url(bucket, "big_extracted.json"), batch)
    mocker.patch.object(store_server.upload_class, "commit", side_effect=OSError(5, "injected: the completion failed"))
    with pytest.raises(Exception, match="nothing was written"):
        select_file(store_server.url(bucket, "big_extracted.json"))
    assert store_server.keys(bucket) == [f"{bucket}/big_extracted.json"]
    assert store_server.no_uploads(bucket)  # the parts already uploaded were aborted


@pytest.mark.parametrize(
    ("input_url", "output_url", "error", "words"),
    [
        pytest.param("{p}://{b}/missing_extracted.json", None, InvalidBatchError, "no such object", id="missing-key"),
        pytest.param("{p}://no-such-bucket-cs/x_extracted.json", None, InvalidBatchError, "no such", id="no-bucket"),
        pytest.param(
            "{p}://{b}/in_extracted.json", "{p}://no-such-bucket-cs/o.json", OutputPathError, "bucket", id="out-bucket"
        ),
        pytest.param("{p}://{b}/in_extracted.json", "{p}://{b}/in_extracted.json", OutputPathError, "input", id="self"),
    ],
)
def test_bad_places_are_one_line_and_nothing_is_written(
    store_server, bucket, input_url, output_url, error, words
) -> None:
    store_server.put(store_server.url(bucket, "in_extracted.json"), GOLDEN_BATCH.read_bytes())
    with pytest.raises(error, match=words) as caught:
        select_file(
            input_url.format(p=store_server.protocol, b=bucket),
            output_url and output_url.format(p=store_server.protocol, b=bucket),
        )
    assert "\n" not in str(caught.value)
    assert store_server.keys(bucket) == [f"{bucket}/in_extracted.json"] and store_server.no_uploads(bucket)


def test_access_denied_is_one_line_naming_the_fix(store_server, bucket, mocker) -> None:
    store_server.put(store_server.url(bucket, "in_extracted.json"), GOLDEN_BATCH.read_bytes())
    options = dict(store_server.options)
    if store_server.protocol == "az":  # Azurite checks the account's key: a wrong one is refused by the server
        options["connection_string"] = store_server.connection_string.replace(AZURITE_KEY, "d3Jvbmc=" * 11)
    else:  # moto and fake-gcs-server check no credentials: the refusal is injected where the client raises it
        options["skip_instance_cache"] = True  # an instance binds its synchronous methods when it is made: a new one
        fs_class = ObjectPath.parse(store_server.url(bucket, "x")).backend.filesystem_class(
            store_server.protocol, options
        )
        mocker.patch.object(fs_class, "_info", side_effect=PermissionError("Access Denied"))
    with pytest.raises(InvalidBatchError, match="access denied by the store; check its credentials") as caught:
        select_file(store_server.url(bucket, "in_extracted.json"), storage_options=options)
    assert store_server.secret not in str(caught.value) and "d3Jvbmc" not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_input_changed_during_the_run_is_refused_and_nothing_is_written(store_server, bucket) -> None:
    url = store_server.url(bucket, "in_extracted.json")
    store_server.put(url, GOLDEN_BATCH.read_bytes())
    seen: list[int] = []

    def rewrite_once(done: int, total: int) -> None:
        if not seen:
            store_server.put(url, GOLDEN_BATCH.read_bytes().replace(b"the", b"THE", 1))
        seen.append(done)

    with pytest.raises(InputChangedError, match="changed while it was being read"):
        select_file(url, chunk_articles=20, progress=rewrite_once)
    assert store_server.keys(bucket) == [f"{bucket}/in_extracted.json"] and store_server.no_uploads(bucket)


def _sent(url: str) -> list[tuple[str, dict[str, str]]]:
    """The requests (method, headers) the client that ``select`` uses for ``url`` sends from now on, as botocore
    hands them to the network."""
    sent: list[tuple[str, dict[str, str]]] = []

    def record(request, **_) -> None:
        headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()}
        sent.append((request.method, headers))

    location(url).filesystem().s3.meta.events.register("before-send.s3", record)  # fsspec's instance: the run's
    return sent


def _per_read(sent: list, mocker) -> list[list]:
    """What was appended to ``sent`` during each chunk's read (``ObjectStore.read_span``), a list a read."""
    per_read: list[list] = []
    real = ObjectStore.read_span

    def read_span(self, *args, **kwargs):
        start = len(sent)
        try:
            return real(self, *args, **kwargs)
        finally:
            per_read.append(sent[start:])

    mocker.patch.object(ObjectStore, "read_span", read_span)
    return per_read


def test_each_chunk_is_read_by_one_ranged_get_on_the_version_planned(s3_server, bucket, mocker) -> None:
    url = s3_server.url(bucket, "in_extracted.json")
    s3_server.put(url, GOLDEN_BATCH.read_bytes())
    sent = _sent(url)
    per_read = _per_read(sent, mocker)
    result = select_file(url, chunk_articles=20)
    etag = s3_server.info(url)["ETag"]
    assert result.chunks == len(per_read) == 10
    for requests in per_read:  # no HEAD, no second GET: one request a chunk
        ((method, headers),) = requests
        assert method == "GET" and headers["If-Match"] == etag and headers["Range"].startswith("bytes=")


@pytest.mark.parametrize("store_server", ["gs", "az"], indirect=True)
def test_each_chunk_is_one_get_on_google_cloud_storage_and_azure(store_server, bucket, mocker) -> None:
    """As on S3 (above), counted where gcsfs and the Azure SDK hand each request to aiohttp."""
    import aiohttp

    url = store_server.url(bucket, "in_extracted.json")
    store_server.put(url, GOLDEN_BATCH.read_bytes())
    sent: list[str] = []
    send = aiohttp.ClientSession._request

    def counted(session, method, *args, **kwargs):
        sent.append(method.upper())
        return send(session, method, *args, **kwargs)

    mocker.patch.object(aiohttp.ClientSession, "_request", counted)
    per_read = _per_read(sent, mocker)
    result = select_file(url, chunk_articles=20)
    assert result.chunks == len(per_read) == 10 and per_read == [["GET"]] * 10


def test_a_chunk_of_an_object_rewritten_after_the_plan_is_refused_by_its_one_get(s3_server, bucket) -> None:
    url = s3_server.url(bucket, "in_extracted.json")
    data = GOLDEN_BATCH.read_bytes()
    s3_server.put(url, data)
    planned = store(location(url))
    version = planned.version()
    assert planned.read_span(version, 10, 30, b"<", b">") == b"<" + data[10:30] + b">"
    s3_server.put(url, data.replace(b"the", b"THE", 1))  # the same size: only the ETag tells
    sent = _sent(url)
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        planned.read_span(version, 10, 30)
    assert [method for method, _ in sent] == ["GET"]


# gcsfs and the Azure SDK retry a refused connection for 30 s and 90 s before they give up, and neither takes an
# option to shorten it: mid-read on S3 alone (a store stopped before the run is refused at once: test_stores.py).
@pytest.mark.parametrize("store_server", ["s3"], indirect=True)
def test_the_server_stopped_mid_read_is_one_transient_line_and_nothing_is_written(store_server, bucket) -> None:
    url = store_server.url(bucket, "in_extracted.json")
    store_server.put(url, GOLDEN_BATCH.read_bytes())
    stopped: list[bool] = []

    def stop_once(done: int, total: int) -> None:
        if not stopped:
            store_server.stop()
            stopped.append(True)

    quick = {"config_kwargs": {"retries": {"max_attempts": 1}}}  # the storage options reach botocore
    try:
        with pytest.raises(ServiceUnavailableError, match="the store cannot be reached .*run again") as caught:
            select_file(url, chunk_articles=20, progress=stop_once, storage_options=quick)
    finally:
        if stopped:
            store_server.start()
    assert caught.value.transient and "\n" not in str(caught.value)
    assert store_server.keys(bucket) == [f"{bucket}/in_extracted.json"] and store_server.no_uploads(bucket)


# Google Cloud Storage lists no resumable upload: an unfinished one cannot be seen, so it is not a test's to see.
@pytest.mark.parametrize("store_server", ["s3", "az"], indirect=True)
def test_sigkill_during_the_upload_leaves_no_object_and_no_partial(store_server, bucket) -> None:
    url = store_server.url(bucket, "big_extracted.json")
    store_server.put(url, json.dumps(make_batch(40000)).encode())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "selection_cli.main", "select", url], env=env, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while not store_server.uploads(bucket):  # a part is being uploaded: the output is half written
            assert child.poll() is None and time.monotonic() < deadline, "the upload never started"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        child.kill()
    assert store_server.keys(bucket) == [f"{bucket}/big_extracted.json"]  # no output, no temporary object
    # The unfinished upload is no object; the scheduled scan aborts it once it is an hour old (moto reports a fixed
    # start date for every upload, so the ages are counted from the date the store reports).
    ((key, started),) = store_server.uploads(bucket)
    protocol = store_server.protocol
    assert key == "big_extracted_selected.json" or key == f"{bucket}/big_extracted_selected.json"
    prefix = ObjectPath(protocol, bucket)
    assert abort_stale_uploads(prefix, now=started + 60) == []  # it may still be alive
    later = started + STALE_UPLOAD_SECONDS
    assert abort_stale_uploads(ObjectPath(protocol, f"{bucket}/elsewhere"), now=later) == []
    assert abort_stale_uploads(prefix, now=later) == [ObjectPath(protocol, f"{bucket}/big_extracted_selected.json")]
    assert store_server.no_uploads(bucket) and store_server.keys(bucket) == [f"{bucket}/big_extracted.json"]


def test_the_scan_of_a_prefix_finds_the_stale_batches_by_modification_time(store_server, bucket) -> None:
    data = GOLDEN_BATCH.read_bytes()
    for key in ("a/one_extracted.json", "a/b/two_extracted.jsonl", "done_extracted.json", ".hidden/x_extracted.json"):
        store_server.put(f"{store_server.protocol}://{bucket}/batches/{key}", data)
    store_server.put(store_server.url(bucket, "batches/done_extracted_selected.json"), b"{}")
    store_server.put(store_server.url(bucket, "elsewhere_extracted.json"), data)

    stale = find_stale_batches(store_server.url(bucket, "batches/"))

    assert [str(p) for p in stale] == [
        store_server.url(bucket, "batches/a/b/two_extracted.jsonl"),
        store_server.url(bucket, "batches/a/one_extracted.json"),
    ]


def test_paths_outside_an_object_data_root_are_refused_before_anything_is_read(store_server, bucket) -> None:
    root = store_server.url(bucket, "batches/")
    paths = resolve_run_paths("day1/x_extracted.json", data_root=root)
    assert paths.input == ObjectPath(store_server.protocol, f"{bucket}/batches/day1/x_extracted.json")
    assert str(paths.output) == store_server.url(bucket, "batches/day1/x_extracted_selected.json")
    for outside in (
        f"{store_server.protocol}://other-{bucket}/batches/x_extracted.json",
        store_server.url(bucket, "batchesX/x_extracted.json"),
        store_server.url(bucket, "batches/../x_extracted.json"),
        "/etc/x_extracted.json",
        f"{'gs' if store_server.protocol == 's3' else 's3'}://{bucket}/batches/x_extracted.json",
    ):
        with pytest.raises(UnsafePathError):
            resolve_run_paths(outside, data_root=root, require_data_root=True)


def test_the_command_line_takes_urls_and_storage_options(store_server, bucket, tmp_path, capsys, monkeypatch) -> None:
    url = store_server.url(bucket, "in_extracted.json")
    store_server.put(url, GOLDEN_BATCH.read_bytes())
    for variable in store_server.env:  # the store reached through --storage-option alone
        monkeypatch.delenv(variable)
    options = [f"--storage-option={key}={json.dumps(value)}" for key, value in store_server.options.items()]

    code = main(["select", url, "-o", str(tmp_path / "o_selected.json"), *options])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "o_selected.json").read_bytes() == select_file(
        GOLDEN_BATCH, tmp_path / "l.json"
    ).output_path.read_bytes()

    code = main(["explain", url, "--index", "3", *options])
    out = capsys.readouterr().out
    assert code == 0 and "in_extracted.json" in out and "article 3" in out.lower()

    missing = store_server.url(bucket, "nothing_extracted.json")
    assert main(["select", missing, *options]) == 65
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"content-selection: error: {missing}: no such object (or bucket); check the URL"]


WARC = ROOT / "tests" / "data" / "warc" / "pages.warc.gz"


def test_extract_streams_a_warc_object_named_loosely_to_the_bytes_of_the_disk(store_server, bucket, tmp_path) -> None:
    url = store_server.url(bucket, "crawls/crawl.warc.gz.bad")
    store_server.put(url, WARC.read_bytes())
    local = tmp_path / "crawl.warc.gz.bad"
    local.write_bytes(WARC.read_bytes())
    out = store_server.url(bucket, "batches/crawl_extracted.json")

    assert main(["extract", url, "-o", out, "--workers", "1"]) == 0
    assert main(["extract", str(local), "-o", str(tmp_path / "crawl_extracted.json"), "--workers", "1"]) == 0

    # the same bytes but for the input's name, which the batch records
    expected = (tmp_path / "crawl_extracted.json").read_bytes().replace(str(local).encode(), url.encode())
    assert store_server.get(out) == expected
    assert store_server.keys(bucket) == [f"{bucket}/batches/crawl_extracted.json", f"{bucket}/crawls/crawl.warc.gz.bad"]


def test_a_store_that_stops_mid_archive_fails_the_extraction_and_writes_nothing(store_server, bucket, mocker) -> None:
    url = store_server.url(bucket, "crawls/crawl.warc.gz")
    store_server.put(url, WARC.read_bytes())
    real = store_server.file_class._fetch_range
    calls = []

    def drop_after_the_first(self, start, end):  # the connection dropped once the scan has begun
        calls.append(start)
        if len(calls) > 1:
            raise OSError(errno.EIO, "connection reset by peer (injected)")
        return real(self, start, end)

    mocker.patch.object(store_server.file_class, "_fetch_range", drop_after_the_first)
    from selection_extraction import ExtractionSettings
    from selection_extraction.extraction import extract_to_file

    with pytest.raises(ReadError, match="the store failed .*retry later"):
        extract_to_file(url, settings=ExtractionSettings(workers=1))
    assert store_server.keys(bucket) == [f"{bucket}/crawls/crawl.warc.gz"] and store_server.no_uploads(bucket)


def test_a_dataset_in_a_store_is_the_bytes_on_a_disk_and_duckdb_reads_it_there(store_server, bucket, tmp_path) -> None:
    duckdb = pytest.importorskip("duckdb")
    for name in ("day1/a_extracted.json", "day2/b_extracted.json"):
        store_server.put(store_server.url(bucket, name), GOLDEN_BATCH.read_bytes())
    local = select_file(GOLDEN_BATCH, tmp_path / "local.parquet", output_format="dataset")

    remote = select_file(store_server.url(bucket, "day1/a_extracted.json"), chunk_articles=20, output_format="dataset")
    select_file(store_server.url(bucket, "day2/b_extracted.json"), output_format="dataset")

    assert str(remote.output_path) == store_server.url(bucket, "day1/a_extracted_selected.parquet")
    assert store_server.get(str(remote.output_path)) == (tmp_path / "local.parquet").read_bytes()
    assert remote.output_sha256 == local.output_sha256
    assert store_server.keys(bucket) == [
        f"{bucket}/day1/a_extracted.json",
        f"{bucket}/day1/a_extracted_selected.parquet",
        f"{bucket}/day2/b_extracted.json",
        f"{bucket}/day2/b_extracted_selected.parquet",
    ]
    assert store_server.no_uploads(bucket)

    connection = duckdb.connect()
    connection.register_filesystem(store_server.fs())  # DuckDB reads the store through its fsspec client
    glob = store_server.url(bucket, "**/*.parquet")
    count, urls = connection.sql(f"SELECT count(*), count(DISTINCT url) FROM read_parquet('{glob}')").fetchall()[0]
    assert (count, urls) == (2 * 181, len({a["url"] for a in json.loads(GOLDEN_BATCH.read_bytes())["articles"]}))


@pytest.mark.parametrize("store_server", ["az"], indirect=True)
def test_a_discarded_upload_leaves_the_blocks_another_writer_staged_for_the_same_blob(store_server, bucket) -> None:
    from selection_storage.stores.azure import Azure

    path = ObjectPath("az", f"{bucket}/out.json", store_server.options)
    fs = path.filesystem()
    first, second = Azure().upload(fs, path.key), Azure().upload(fs, path.key)
    first.write(b"first writer")
    first.close()  # its block is staged, not yet committed
    second.write(b"second writer")
    second.close()
    second.discard()  # the second writer fails: the blob's uncommitted blocks are not all its own, so none is deleted
    # (Azure would refuse the first writer's commit of a deleted block; Azurite accepts it: the blocks are checked.)
    assert not store_server.no_uploads(bucket)
    first.commit()
    assert store_server.get(store_server.url(bucket, "out.json")) == b"first writer"
    assert store_server.no_uploads(bucket)  # a commit drops the blob's other uncommitted blocks


@pytest.mark.parametrize("store_server", ["az"], indirect=True)
def test_a_discarded_upload_alone_on_its_blob_leaves_no_block(store_server, bucket) -> None:
    from selection_storage.stores.azure import Azure

    path = ObjectPath("az", f"{bucket}/out.json", store_server.options)
    upload = Azure().upload(path.filesystem(), path.key)
    upload.write(b"a writer that fails")
    upload.close()
    assert not store_server.no_uploads(bucket)
    upload.discard()
    assert store_server.no_uploads(bucket) and store_server.keys(bucket) == []


def test_the_sweep_of_a_prefix_in_a_shared_bucket_lists_its_uploads_alone_and_aborts_only_what_it_may(
    s3_server, bucket, mocker
) -> None:
    """S3 is asked for the uploads under the prefix (a shared bucket's first page may hold none of them); of those,
    the ones whose writer the caller knows has stopped are aborted at any age, the others only past the hour."""
    fs = s3_server.fs()
    for key in ("other/a.jsonl", "other/b.jsonl", "mine/done.jsonl", "mine/nested/live.jsonl", "mine-too/x.jsonl"):
        fs.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
    prefix = ObjectPath("s3", f"{bucket}/mine")
    asked = mocker.spy(type(prefix.filesystem()), "call_s3")  # what the sweep asks the store (the store answers)
    now = max(started for _, started in s3_server.uploads(bucket)) + 60  # moto dates every upload alike: a minute
    aborted = abort_stale_uploads(prefix, now=now, stopped=lambda key: key == "done.jsonl")
    assert aborted == [ObjectPath("s3", f"{bucket}/mine/done.jsonl")]
    listings = [c for c in asked.call_args_list if c.args[1] == "list_multipart_uploads"]
    assert [c.kwargs for c in listings] == [{"Bucket": bucket, "Prefix": "mine"}]
    left = sorted(key for key, _ in s3_server.uploads(bucket))
    assert left == sorted(k for k in ("other/a.jsonl", "other/b.jsonl", "mine/nested/live.jsonl", "mine-too/x.jsonl"))
