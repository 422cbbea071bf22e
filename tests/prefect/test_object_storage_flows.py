"""The flows on batches in object storage, on each store's real protocol on loopback (S3, Google Cloud Storage,
Azure: ``tests/support/object_stores.py``): ``select-content`` in-process, on the process pool and on a Dask cluster
of 2 workers that share no directory, ``select-directory`` on a prefix, ``extract-and-select`` of a WARC object and
the inbox on a prefix. Every output is compared with the same run on the same bytes on a disk.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from content_selection.flows.select_content import select_content
from content_selection.flows.select_directory import select_directory
from selection_engine import select_file
from tests.support import ROOT
from tests.support.prefect_fixtures import artifacts_of

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness", "no_data_root_env")]


@pytest.fixture
def expected(tmp_path: Path) -> tuple[bytes, bytes]:
    """The output and report ``select`` writes for the golden batch on a disk."""
    select_file(GOLDEN_BATCH, tmp_path / "disk_selected.json", tmp_path / "disk_report.jsonl")
    return (tmp_path / "disk_selected.json").read_bytes(), (tmp_path / "disk_report.jsonl").read_bytes()


@pytest.mark.parametrize("runner", ["in-process", "process", "dask"])
def test_select_content_in_a_store_writes_the_disk_bytes_on_every_runner(
    store_server, bucket, expected, runner
) -> None:
    fs = store_server.fs()
    fs.pipe_file(f"{bucket}/in/aeb_extracted.json", GOLDEN_BATCH.read_bytes())

    state = select_content(
        input_path=store_server.url(bucket, "in/aeb_extracted.json"),
        report_path=store_server.url(bucket, "out/report.jsonl"),
        output_path=store_server.url(bucket, "out/aeb_selected.json"),
        task_runner=runner,
        chunk_size=20,
        storage_options=store_server.options,
        return_state=True,
    )

    assert state.is_completed(), state.message
    summary = state.result()
    assert summary.output_path == store_server.url(bucket, "out/aeb_selected.json") and summary.articles == 181
    assert fs.cat_file(f"{bucket}/out/aeb_selected.json") == expected[0]
    assert fs.cat_file(f"{bucket}/out/report.jsonl") == expected[1]
    assert sorted(fs.find(bucket)) == [
        f"{bucket}/in/aeb_extracted.json",
        f"{bucket}/out/aeb_selected.json",
        f"{bucket}/out/report.jsonl",
    ]
    assert store_server.no_uploads(bucket)
    if runner != "in-process":  # 10 chunks, each read from the store by a worker, whose bytes come back
        assert summary.read_as.startswith("in 10 chunks of articles, in parallel")
    artifacts = asyncio.run(artifacts_of(state.state_details.flow_run_id))
    shown = " ".join(str(a.data) + str(a.description) for a in artifacts)
    assert store_server.url(bucket, "out/aeb_selected.json") in shown
    assert store_server.secret not in shown


def test_select_directory_on_a_prefix_selects_what_is_stale(store_server, bucket, expected) -> None:
    fs = store_server.fs()
    for key in ("batches/a/one_extracted.json", "batches/two_extracted.json", "batches/done_extracted.json"):
        fs.pipe_file(f"{bucket}/{key}", GOLDEN_BATCH.read_bytes())
    fs.pipe_file(f"{bucket}/batches/done_extracted_selected.json", b"kept as it is")

    state = select_directory(
        directory=store_server.url(bucket, "batches"), storage_options=store_server.options, return_state=True
    )

    assert state.is_completed(), state.message
    assert state.result().selected == [
        store_server.url(bucket, "batches/a/one_extracted_selected.json"),
        store_server.url(bucket, "batches/two_extracted_selected.json"),
    ]
    for key in ("batches/a/one_extracted_selected.json", "batches/two_extracted_selected.json"):
        assert fs.cat_file(f"{bucket}/{key}") == expected[0]
    assert fs.cat_file(f"{bucket}/batches/done_extracted_selected.json") == b"kept as it is"


def test_a_path_outside_an_object_data_root_fails_the_run_and_reads_nothing(store_server, bucket) -> None:
    fs = store_server.fs()
    fs.pipe_file(f"{bucket}/elsewhere/x_extracted.json", GOLDEN_BATCH.read_bytes())
    state = select_content(
        input_path=store_server.url(bucket, "elsewhere/x_extracted.json"),
        data_root=store_server.url(bucket, "batches/"),
        require_data_root=True,
        return_state=True,
    )
    assert state.is_failed() and "outside the data root" in state.message
    assert sorted(fs.find(bucket)) == [f"{bucket}/elsewhere/x_extracted.json"]


def test_extract_and_select_from_a_warc_object_writes_the_disk_bytes(store_server, bucket, tmp_path) -> None:
    from content_selection.flows.extract_and_select import extract_and_select

    warc = ROOT / "tests" / "data" / "warc" / "pages.warc.gz"
    fs = store_server.fs()
    fs.pipe_file(f"{bucket}/crawls/day1.warc.gz", warc.read_bytes())
    local = tmp_path / "day1.warc.gz"
    local.write_bytes(warc.read_bytes())
    url = store_server.url(bucket, "crawls/day1.warc.gz")

    remote = extract_and_select(pages=url, workers=1, storage_options=store_server.options, return_state=True)
    on_disk = extract_and_select(pages=str(local), workers=1, return_state=True)

    assert remote.is_completed(), remote.message
    assert on_disk.is_completed(), on_disk.message
    summary = remote.result()
    assert summary.extracted_path == f"{url.removesuffix('.warc.gz')}_extracted.json"
    assert summary.output_path == f"{url.removesuffix('.warc.gz')}_extracted_selected.json"
    for written in ("day1_extracted.json", "day1_extracted_selected.json"):
        expected = (tmp_path / written).read_bytes().replace(str(local).encode(), url.encode())
        assert fs.cat_file(f"{bucket}/crawls/{written}") == expected, written
    assert store_server.no_uploads(bucket)


def test_the_inbox_on_a_prefix_extracts_each_new_web_archive_once(store_server, bucket) -> None:
    from content_selection.flows.extract_inbox import extract_inbox

    warc = ROOT / "tests" / "data" / "warc" / "pages.warc.gz"
    fs = store_server.fs()
    fs.pipe_file(f"{bucket}/root/inbox/day1.warc.gz", warc.read_bytes())
    fs.pipe_file(f"{bucket}/root/inbox/notes.txt", b"not a page set")

    first = extract_inbox(
        data_root=store_server.url(bucket, "root"), workers=1, storage_options=store_server.options, return_state=True
    )
    again = extract_inbox(data_root=store_server.url(bucket, "root"), workers=1, return_state=True)

    assert first.is_completed(), first.message
    summary = first.result()
    assert summary.extracted == [store_server.url(bucket, "root/inbox/day1_extracted.json")]
    assert summary.ignored == [store_server.url(bucket, "root/inbox/notes.txt")]  # (page sets: test_pages_in_stores)
    assert again.is_completed() and again.result().extracted == [] and again.result().up_to_date == 1
    batch = json.loads(fs.cat_file(f"{bucket}/root/inbox/day1_extracted.json"))
    assert (
        batch["extraction"]["input"] == store_server.url(bucket, "root/inbox/day1.warc.gz")
        and len(batch["articles"]) == 8
    )
