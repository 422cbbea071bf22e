"""The flows ``extract-articles`` and ``extract-and-select`` under the session's Prefect test harness.

Real extractors on real pages. The completion event is read back from the
harness's API and checked against the trigger of the ``triggered`` selection
deployment (the end-to-end trigger itself is exercised with a real server by
``test_prefect_server.py``). Waits for the API to catch up are bounded; no
assertion depends on time.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

import selection_core as sc
from content_selection.flows.extract_and_select import PipelineRunSummary, extract_and_select
from content_selection.flows.extract_articles import ExtractionRunSummary, extract_articles
from content_selection.shell.events import BATCH_EXTRACTED_EVENT, BATCH_PATH_LABEL, batch_extracted_trigger
from content_selection.shell.progress_artifacts import follow_progress
from content_selection.tasks.selection import PROGRESS_ARTIFACT_KEY
from selection_core.errors import UnsafePathError
from selection_core.evidence import (
    SCORES_ARTIFACT_KEY,
    SUMMARY_ARTIFACT_KEY,
)
from selection_extraction import extract_pages, find_pages
from selection_extraction.artifacts import (
    EXTRACTION_PROGRESS_ARTIFACT_KEY,
    EXTRACTION_SUMMARY_ARTIFACT_KEY,
    PAGES_ARTIFACT_KEY,
)
from tests.support import DATA, PAGES
from tests.support.evidence import batch_evidence
from tests.support.prefect_fixtures import (
    artifacts_of,
    expected_output,
    extract_and_select_artifact_keys,
    leftover_files,
)

pytestmark = pytest.mark.usefixtures("prefect_harness")

SAMPLE = sorted(PAGES.glob("*.html.gz"))[:3]

#: Upper bound of the wait for events to reach the API (not a timing assertion).
API_CATCH_UP_SECONDS = 60


@pytest.fixture
def pages(data_root: Path) -> Path:
    """Three real pages in ``<data root>/2024-05-01/``."""
    folder = data_root / "2024-05-01"
    folder.mkdir()
    for page in SAMPLE:
        shutil.copy(page, folder / page.name)
    return folder


def read_batch_extracted_events(path: Path) -> list[Any]:
    """The ``content-selection.batch.extracted`` events about ``path`` stored by the API now."""
    from prefect import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    event_filter = EventFilter(
        event=EventNameFilter(name=[BATCH_EXTRACTED_EVENT]),
        resource=EventResourceFilter(id=[f"content-selection.batch.{path}"]),
    )

    async def read() -> list[Any]:
        async with get_client() as client:
            return list((await client.read_events(filter=event_filter, limit=50)).events)

    return asyncio.run(read())


def wait_for_batch_extracted_events(path: Path) -> list[Any]:
    """As :func:`read_batch_extracted_events`, once at least one has arrived (bounded wait)."""
    deadline = time.monotonic() + API_CATCH_UP_SECONDS
    while True:
        events = read_batch_extracted_events(path)
        if events or time.monotonic() > deadline:
            return events
        time.sleep(0.3)


@pytest.mark.slow
def test_extract_articles_writes_the_batch_and_announces_it(pages: Path, data_root: Path) -> None:
    state = extract_articles(pages=str(pages), workers=2, return_state=True)
    assert state.is_completed()
    result = state.result()
    output = data_root / "2024-05-01_extracted.json"
    assert isinstance(result, ExtractionRunSummary)
    assert result.output_path == str(output) and result.articles == len(SAMPLE) and result.event_emitted

    # The batch is the engine's own, byte for byte (same input label).
    reference = extract_pages(find_pages(pages, label=str(pages)))
    assert output.read_bytes() == sc.dump_batch(reference.doc)
    assert leftover_files(data_root, {output, *(pages / p.name for p in SAMPLE)}) == []

    # The completion event follows the selection stage's contract, and the trigger matches it.
    events = wait_for_batch_extracted_events(output)
    assert len(events) == 1
    event = events[0]
    assert event.resource[BATCH_PATH_LABEL] == str(output)
    assert event.payload["path"] == str(output) and event.payload["articles"] == len(SAMPLE)
    trigger = batch_extracted_trigger()
    assert event.event in trigger.expect
    assert all(fnmatch.fnmatchcase(event.resource.id, pattern) for pattern in trigger.match.model_dump().values())
    related = {r.get("prefect.resource.role"): r.id for r in event.related}
    assert related.get("flow-run") == f"prefect.flow-run.{state.state_details.flow_run_id}"


def test_extract_articles_writes_json_lines_to_a_jsonl_name(pages: Path, data_root: Path) -> None:
    output = data_root / "out" / "2024-05-01_extracted.jsonl"
    output.parent.mkdir()
    state = extract_articles(pages=str(pages), output_path=str(output), emit_event=False, return_state=True)
    assert state.is_completed()
    result = state.result()
    record = output.with_name("2024-05-01_extracted.extraction.json")
    assert result.output_path == str(output) and result.record_path == str(record)
    reference = extract_pages(find_pages(pages, label=str(pages)))
    assert output.read_bytes() == sc.render_lines(reference.doc["articles"])
    assert json.loads(record.read_bytes()) == {k: v for k, v in reference.doc.items() if k != "articles"}
    assert result.output_sha256 == hashlib.sha256(output.read_bytes()).hexdigest()
    assert leftover_files(data_root, {output, record, *(pages / p.name for p in SAMPLE)}) == []


def test_extract_articles_artifacts(pages: Path, data_root: Path) -> None:
    state = extract_articles(pages=str(pages), max_table_rows=2, emit_event=False, return_state=True)
    assert state.is_completed()
    result = state.result()
    assert result.event_emitted is False
    by_key = {a.key: a for a in asyncio.run(artifacts_of(state.state_details.flow_run_id))}
    assert set(by_key) == {PAGES_ARTIFACT_KEY, EXTRACTION_SUMMARY_ARTIFACT_KEY, EXTRACTION_PROGRESS_ARTIFACT_KEY}
    rows = json.loads(by_key[PAGES_ARTIFACT_KEY].data)
    assert [row["id"] for row in rows] == [p.name.removesuffix(".html.gz") for p in SAMPLE[:2]]
    assert "2 of 3 pages" in by_key[PAGES_ARTIFACT_KEY].description
    summary = by_key[EXTRACTION_SUMMARY_ARTIFACT_KEY].data
    assert "| Pages | 3 |" in summary and f"`{result.output_sha256}`" in summary
    assert "newspaper.article(url, input_html=html" in summary
    assert float(by_key[EXTRACTION_PROGRESS_ARTIFACT_KEY].data) == 100.0


def test_extract_and_select_runs_both_steps_with_their_artifacts(pages: Path, data_root: Path) -> None:
    report = data_root / "report.jsonl"
    state = extract_and_select(pages=str(pages), report_path=str(report), return_state=True)
    assert state.is_completed()
    result = state.result()
    extracted = data_root / "2024-05-01_extracted.json"
    selected = data_root / "2024-05-01_extracted_selected.json"
    assert isinstance(result, PipelineRunSummary)
    assert (result.extracted_path, result.output_path) == (str(extracted), str(selected))
    # The selection is exactly what the select step makes of the extracted batch.
    assert selected.read_bytes() == expected_output(extracted)
    assert len(report.read_text().splitlines()) == len(SAMPLE)
    assert sum(result.by_extractor.values()) == len(SAMPLE)

    by_key = {a.key: a for a in asyncio.run(artifacts_of(state.state_details.flow_run_id))}
    assert set(by_key) == extract_and_select_artifact_keys()
    assert f"| Input SHA-256 | `{result.extracted_sha256}` |" in by_key[SUMMARY_ARTIFACT_KEY].data
    # No completion event: the selection is already done.
    assert read_batch_extracted_events(extracted) == []


@pytest.mark.parametrize("pages_per_chunk", [None, 2], ids=["one-task", "in-chunks"])
def test_extract_and_select_keeps_only_the_first_rows_and_can_be_followed(
    pages: Path, data_root: Path, pages_per_chunk: int | None
) -> None:
    """The tables hold the first ``max_table_rows`` rows (the batch is never held whole, in one
    task or in chunks), the bytes are the engine's and the core's, and a follower sees the progress."""
    seen: dict[str, list[tuple[int, int]]] = {EXTRACTION_PROGRESS_ARTIFACT_KEY: [], PROGRESS_ARTIFACT_KEY: []}
    followers = {key: (lambda done, total, key=key: seen[key].append((done, total))) for key in seen}
    with follow_progress(followers):
        state = extract_and_select(
            pages=str(pages), max_table_rows=2, pages_per_chunk=pages_per_chunk, workers=1, return_state=True
        )
    assert state.is_completed()
    result = state.result()
    extracted = data_root / "2024-05-01_extracted.json"
    assert extracted.read_bytes() == sc.dump_batch(extract_pages(find_pages(pages, label=str(pages))).doc)
    assert Path(result.output_path).read_bytes() == expected_output(extracted)
    assert leftover_files(data_root, {extracted, Path(result.output_path), *(pages / p.name for p in SAMPLE)}) == []
    by_key = {a.key: a for a in asyncio.run(artifacts_of(state.state_details.flow_run_id))}
    ids = [p.name.removesuffix(".html.gz") for p in SAMPLE[:2]]
    assert [row["id"] for row in json.loads(by_key[PAGES_ARTIFACT_KEY].data)] == ids
    # The scores table and the closest calls are what select-content shows of the batch held whole.
    doc = sc.parse_batch(extracted.read_bytes(), str(extracted))
    shown = batch_evidence(doc, sc.select_articles(doc["articles"]), 2)
    assert json.loads(by_key[SCORES_ARTIFACT_KEY].data) == json.loads(json.dumps(shown.rows))
    assert [row["index"] for row in shown.rows] == [0, 1]
    assert "2 of 3 articles" in by_key[SCORES_ARTIFACT_KEY].description
    assert seen[EXTRACTION_PROGRESS_ARTIFACT_KEY][-1] == (3, 3) and seen[PROGRESS_ARTIFACT_KEY][-1] == (3, 3)
    if pages_per_chunk:  # pages from 0 as the chunks (2 pages, then 1) end, of the 3 expected
        assert seen[EXTRACTION_PROGRESS_ARTIFACT_KEY] == [(0, 3), (2, 3), (3, 3), (3, 3)]


def test_paths_outside_the_data_root_fail_before_any_work(pages: Path, data_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    state = extract_articles(pages=str(pages), output_path=str(outside), return_state=True)
    assert state.is_failed()
    with pytest.raises(UnsafePathError, match="outside the data root"):
        state.result()
    assert not outside.exists()
    assert leftover_files(data_root, {pages / p.name for p in SAMPLE}) == []


def test_flow_parameters_are_described_for_the_ui() -> None:
    from prefect.utilities.callables import parameter_schema

    for flow_object in (extract_articles, extract_and_select):
        schema = parameter_schema(flow_object.fn).model_dump()
        assert schema["properties"], flow_object.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{flow_object.name}: parameter {name} has no description"


@pytest.mark.slow
@pytest.mark.parametrize("task_runner", ["in-process", "process"])
def test_extract_articles_reads_a_web_archive(data_root: Path, task_runner: str) -> None:
    warc = data_root / "crawl" / "pages.warc.gz"
    warc.parent.mkdir()
    shutil.copy(DATA / "warc" / "pages.warc.gz", warc)
    state = extract_articles(
        pages=str(warc), emit_event=False, task_runner=task_runner, pages_per_chunk=3, return_state=True
    )
    assert state.is_completed()
    result = state.result()
    output = data_root / "crawl" / "pages_extracted.json"
    assert result.output_path == str(output) and result.articles == 8
    reference = extract_pages(find_pages(warc, label=str(warc)))
    assert output.read_bytes() == sc.dump_batch(reference.doc)
    by_key = {a.key: a for a in asyncio.run(artifacts_of(state.state_details.flow_run_id))}
    summary = by_key[EXTRACTION_SUMMARY_ARTIFACT_KEY].data
    assert (
        "| WARC records | html 8, warcinfo 1, request 6, metadata 1, revisit 1, redirect 1, not_200 1, not_html 1 |"
        in summary
    )
