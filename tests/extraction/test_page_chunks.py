"""Cutting an extraction into chunks of pages (selection_extraction.page_chunks): the cuts, the counts, the join.

The pure parts run on made-up pages; the join runs the real extractors on the
manifest of ``tests/data/pages`` and must give the batch of one run, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selection_core as sc
from selection_extraction import (
    ExtractionSettings,
    ExtractionStats,
    Page,
    PageSet,
    default_extractors,
    extract_pages,
    find_pages,
    stop_kept_workers,
)
from selection_extraction.extracted import NO_STATS
from selection_extraction.extraction import extract_readings
from selection_extraction.page_chunks import (
    MAX_PAGES_PER_CHUNK,
    PAGE_CHUNKS_PER_WORKER,
    ChunkExtraction,
    extract_chunk,
    page_chunks,
)
from selection_extraction.pages import PageReadings
from tests.support import DATA, PAGES, examples
from tests.support.chunks import join_chunks


@pytest.fixture
def no_kept_workers() -> Iterator[None]:
    """The chunks keep their worker; stop it after the test."""
    yield
    stop_kept_workers()


def made_up_pages(tmp_path: Path, sizes: list[int]) -> PageSet:
    """Page files of the given sizes (in bytes), in order."""
    pages = []
    for index, size in enumerate(sizes):
        file = tmp_path / f"p{index}.html"
        file.write_bytes(b"x" * size)
        pages.append(Page(f"p{index}", None, file.name, file))
    return PageSet(str(tmp_path), "directory", tuple(pages))


def test_chunk_counts_add_up() -> None:
    a = ExtractionStats(2, 0, {"trafilatura": 1}, {"trafilatura": 1}, 1, ("connect",))
    b = ExtractionStats(3, 1, {"trafilatura": 2, "readability": 1}, {}, 0, ("send",))
    total = NO_STATS + a + b
    assert (total.pages, total.unreadable_pages, total.worker_crashes) == (5, 1, 1)
    assert total.errors == {"trafilatura": 3, "newspaper4k": 0, "readability": 1}
    assert total.timeouts == {"trafilatura": 1, "newspaper4k": 0, "readability": 0}
    assert total.network_attempts == ("connect", "send")


def chunks_of(page_set: PageSet, pages_per_chunk: int | None, workers: int) -> list[tuple[int, int]]:
    """The bounds of the chunks of ``page_set``, cut as the flow cuts them."""
    readings = PageReadings(page_set, read_files=False)
    return [(c.start, c.stop) for c in page_chunks(readings, pages_per_chunk, workers, 7.0)]


@settings(max_examples=examples(100), deadline=None)
@given(sizes=st.lists(st.integers(0, 2_000), min_size=1, max_size=40), workers=st.integers(1, 6))
def test_the_chunks_cover_every_page_once_in_order_within_the_bytes_cap(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], workers: int
) -> None:
    page_set = made_up_pages(tmp_path_factory.mktemp("pages"), sizes)
    bounds = chunks_of(page_set, None, workers)
    assert [i for start, stop in bounds for i in range(start, stop)] == list(range(len(sizes)))
    most = max(1, -(-sum(max(1, s) for s in sizes) // (PAGE_CHUNKS_PER_WORKER * workers)))
    for start, stop in bounds:  # at most about the input's bytes / (2 x workers), but a larger page alone
        assert stop - start == 1 or sum(max(1, s) for s in sizes[start:stop]) <= most


def test_without_a_chunk_size_no_chunk_has_more_than_the_most_pages(tmp_path: Path) -> None:
    """2 chunks per worker, unless that makes chunks of more than ``MAX_PAGES_PER_CHUNK`` pages."""
    n = 2 * MAX_PAGES_PER_CHUNK + 1
    bounds = chunks_of(made_up_pages(tmp_path, [1] * n), None, workers=1)
    assert len(bounds) == 3 and max(stop - start for start, stop in bounds) <= MAX_PAGES_PER_CHUNK
    assert bounds[0][0] == 0 and bounds[-1][1] == n


def test_a_chunk_size_cuts_consecutive_pages(tmp_path: Path) -> None:
    readings = PageReadings(made_up_pages(tmp_path, [1] * 5), read_files=False)
    chunks = list(page_chunks(readings, 2, workers=3, time_limit_seconds=7.0))
    assert [(c.start, c.stop) for c in chunks] == [(0, 2), (2, 4), (4, 5)]
    assert [p.id for c in chunks for p, data in c.readings if data is None] == ["p0", "p1", "p2", "p3", "p4"]
    assert {c.time_limit_seconds for c in chunks} == {7.0}
    with pytest.raises(ValueError, match="at least 1"):
        list(page_chunks(readings, 0, workers=1, time_limit_seconds=7.0))


def test_without_a_chunk_size_the_bytes_are_balanced_over_the_workers(tmp_path: Path) -> None:
    assert PAGE_CHUNKS_PER_WORKER == 2
    assert chunks_of(made_up_pages(tmp_path, [10, 10, 10, 10, 400, 10, 10, 10]), None, 1) == [(0, 4), (4, 5), (5, 8)]
    assert chunks_of(made_up_pages(tmp_path, [100] * 8), None, 2) == [(0, 2), (2, 4), (4, 6), (6, 8)]


def test_a_web_archive_is_cut_into_chunks_of_its_pages_with_their_bytes() -> None:
    readings = PageReadings(find_pages(DATA / "warc" / "pages.warc.gz"), read_files=False)
    chunks = list(page_chunks(readings, 3, workers=2, time_limit_seconds=7.0))
    assert [(c.start, c.stop) for c in chunks] == [(0, 3), (3, 6), (6, 8)]
    assert all(isinstance(data, bytes) for c in chunks for _, data in c.readings)
    assert readings.warc_records is not None and readings.warc_records["html"] == 8


@pytest.mark.usefixtures("no_kept_workers")
def test_joined_chunks_are_the_batch_of_one_run() -> None:
    page_set = find_pages(PAGES / "manifest.jsonl")
    whole = extract_pages(page_set, ExtractionSettings(time_limit_seconds=30.0, workers=1))
    readings = PageReadings(page_set, read_files=False)
    chunks = list(page_chunks(readings, 2, workers=1, time_limit_seconds=30.0))
    parts = [extract_chunk(chunk) for chunk in chunks]
    assert [part.start for part in parts] == [chunk.start for chunk in chunks] == [0, 2, 4]
    joined = join_chunks(readings, parts, default_extractors(), 30.0)
    assert sc.dump_batch(joined.doc) == sc.dump_batch(whole.doc)
    assert joined.stats == whole.stats


@pytest.mark.usefixtures("no_kept_workers")
def test_a_kept_worker_recycled_in_the_middle_of_a_chunk_gives_the_batch_of_one_run() -> None:
    """A task runner's kept worker is replaced every ``recycle_after`` pages, wherever that falls
    (``test_pool.py`` shows the replacing); the batch is the same bytes as one run's without recycling."""
    page_set = find_pages(PAGES / "manifest.jsonl")
    whole = extract_pages(page_set, ExtractionSettings(time_limit_seconds=30.0, workers=1, recycle_after=10**6))
    recycling = ExtractionSettings(time_limit_seconds=30.0, workers=1, recycle_after=2, keep_workers=True)
    readings = PageReadings(page_set, read_files=False)
    chunks = list(page_chunks(readings, 3, workers=1, time_limit_seconds=30.0))
    parts = []
    for chunk in chunks:
        articles: list[dict] = []
        stats = extract_readings(chunk.readings, articles.append, recycling, default_extractors())
        parts.append(ChunkExtraction(chunk.start, articles, stats))
    # 6 pages in 2 chunks of 3, 2 pages a worker: the second chunk's first page is its first worker's second
    assert len(page_set.entries) == 6 and len(chunks) == 2
    joined = join_chunks(readings, parts, default_extractors(), 30.0)
    assert sc.dump_batch(joined.doc) == sc.dump_batch(whole.doc)
    assert joined.stats == whole.stats
