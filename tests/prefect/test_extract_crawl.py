"""The flow ``extract-crawl`` under the session's Prefect test harness, on local worker processes: its summary, its
artifacts (the progress and the table of WARCs), a failed WARC failing the run with its status; the cluster's runs
are in ``tests/system/test_crawl_cluster.py``."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from content_selection.flows.extract_crawl import (
    CRAWL_PROGRESS_ARTIFACT_KEY,
    CRAWL_WARCS_ARTIFACT_KEY,
    Snapshot,
    extract_crawl,
)
from content_selection.shell.progress_artifacts import follow_progress
from selection_cli.crawl import CrawlBar
from selection_crawl.job import CrawlFailedError
from selection_crawl.unit import WarcOutcome
from tests.support import DATA
from tests.support.crawls import write_crawl
from tests.support.prefect_fixtures import artifacts_of

CRAWL = DATA / "crawl"
PATHS = CRAWL / "crawl-data" / "CC-MAIN-2024-18" / "warc.paths.gz"


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_a_crawl_run_shows_its_progress_and_its_warcs_then_a_rerun_does_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    state = extract_crawl(str(PATHS), str(out), base=str(CRAWL), workers=2, time_limit_seconds=30, return_state=True)
    summary = state.result()
    assert (summary.warcs, summary.done, summary.done_before, summary.failed) == (4, 4, 0, 0)
    assert summary.pages == summary.articles == 24 and summary.summary_path == str(out / "crawl.json")
    artifacts = sorted(asyncio.run(artifacts_of(state.state_details.flow_run_id)), key=lambda a: a.created)
    by_key = {a.key: a for a in artifacts}  # the newest version of each
    assert sum(a.key == CRAWL_WARCS_ARTIFACT_KEY for a in artifacts) >= 2  # updated as WARCs finish
    assert by_key[CRAWL_PROGRESS_ARTIFACT_KEY].data == 100.0
    table = by_key[CRAWL_WARCS_ARTIFACT_KEY].data
    rows = json.loads(table) if isinstance(table, str) else table
    assert "4 of 4 WARCs done, 0 failed" in by_key[CRAWL_WARCS_ARTIFACT_KEY].description
    assert [row["state"] for row in rows] == ["done"] * 4 and sum(row["pages"] for row in rows) == 24

    again = extract_crawl(str(PATHS), str(out), base=str(CRAWL), workers=2, time_limit_seconds=30)
    assert (again.done, again.done_before) == (4, 4)

    listing = tmp_path / "listing.txt"
    listing.write_text(f"{PATHS.parent / 'nothing.warc.gz'}\n")
    with pytest.raises(CrawlFailedError, match="1 of 1 WARCs failed") as failed:
        extract_crawl(str(listing), str(out / "bad"), workers=1)
    assert failed.value.exit_code == 65


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_command_lines_bar_moves_with_the_pages_and_shows_rate_time_left_and_each_failure() -> None:
    terminal = _Terminal()
    bar = CrawlBar(terminal)
    bar(Snapshot(finished=0, total=4, pages=60, estimate=1200, seconds=10.0))  # a worker's report, mid-WARC
    bar(Snapshot(1, 4, 120, 1200, 20.0), WarcOutcome("done", pages=100))
    bar(Snapshot(2, 4, 120, 1200, 30.0), WarcOutcome.failed("s3://b/x.warc.gz: not a WARC file", 65))
    text = terminal.getvalue()
    assert "crawling 0/4 WARCs, 60 of ~1200 pages, 6.0 pages/s, 3m10s left" in text
    assert "crawling 1/4 WARCs, 120 of ~1200 pages, 6.0 pages/s, 3m00s left" in text
    assert "\r\033[Kcontent-selection: s3://b/x.warc.gz: not a WARC file\n" in text
    assert text.endswith("crawling 2/4 WARCs, 120 of ~1200 pages, 4.0 pages/s, 4m30s left")
    plain = io.StringIO()
    CrawlBar(plain)(Snapshot(1, 1, 5, 5, 1.0), WarcOutcome("done", pages=5))
    assert plain.getvalue() == ""  # not a terminal: no bar


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_a_crawl_into_a_store_as_a_dataset_is_read_by_duckdb_over_its_glob(s3_server, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    bucket = s3_server.new_bucket()
    prefix = s3_server.url(bucket, "selected/CC-MAIN-2024-18")
    # The options name the store: the workers are forks of a server that may have started before its environment was set
    options = s3_server.options
    summary = extract_crawl(
        str(PATHS), prefix, base=str(CRAWL), workers=2, storage_options=options, output_format="dataset"
    )
    assert (summary.done, summary.pages) == (4, 24)
    batches = extract_crawl(str(PATHS), str(tmp_path / "batches"), base=str(CRAWL), workers=2)
    assert batches.done == 4
    keys = s3_server.keys(bucket)
    assert sum(k.endswith(".parquet") for k in keys) == 4 and not any(k.endswith(".jsonl") for k in keys)
    assert json.loads(s3_server.get(f"{prefix}/crawl.json"))["format"] == "dataset"
    assert not any(str(value) in s3_server.get(f"{prefix}/crawl.json").decode() for value in options.values())

    connection = duckdb.connect()
    connection.register_filesystem(s3_server.fs())
    texts = dict(connection.sql(f"SELECT id, text FROM read_parquet('{prefix}/**/*.parquet')").fetchall())
    expected = {}
    for output in sorted((tmp_path / "batches").rglob("*.jsonl")):
        for article in map(json.loads, output.read_text(encoding="utf-8").splitlines()):
            chosen = article["selected_extractor"]
            expected[article["id"]] = article[chosen]["cleaned_text" if chosen == "readability" else "text"]
    assert texts == expected and len(texts) == 24
    assert s3_server.no_uploads(bucket)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_the_progress_moves_with_the_pages_while_a_warc_is_extracted(tmp_path: Path) -> None:
    write_crawl(tmp_path / "crawl", 1, 80)
    seen: list[tuple[Snapshot, object]] = []
    with follow_progress({CRAWL_WARCS_ARTIFACT_KEY: lambda now, outcome=None: seen.append((now, outcome))}):
        summary = extract_crawl(str(tmp_path / "crawl"), str(tmp_path / "out"), workers=1, time_limit_seconds=30)
    assert summary.pages == 80
    during = [now for now, outcome in seen if outcome is None and now.finished == 0]
    # pages of the WARC in flight, before it ends (its last pages can be published before the WARC is counted done)
    assert during and during[0].pages < 80 and all(0 < now.pages <= 80 for now in during)
    assert all(now.estimate >= now.pages for now in during)  # of an estimate from the bytes read
    assert [now.pages for now in during] == sorted(now.pages for now in during)
    assert seen[-1][0].finished == 1 and seen[-1][0].pages == 80
