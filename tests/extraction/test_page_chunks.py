"""Cutting an extraction into chunks of pages (selection_extraction.page_chunks): the plan, the counts, the join.

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
from selection_extraction.extracted import NO_STATS, StatsTotal
from selection_extraction.page_chunks import (
    MAX_PAGES_PER_CHUNK,
    PAGE_CHUNKS_PER_WORKER,
    ChunkExtraction,
    ChunkProgress,
    balanced_bounds,
    capped_bounds,
    extract_chunk,
    plan_page_chunks,
)
from tests.support import PAGES, examples
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


def test_a_running_total_gives_the_counts_of_all_chunks_and_moves_on() -> None:
    a = ExtractionStats(2, 0, {"trafilatura": 1}, {"trafilatura": 1}, 1, ("connect",))
    b = ExtractionStats(3, 1, {"trafilatura": 2, "readability": 1}, {}, 0, ("send",))
    total = StatsTotal()
    total.add(a)
    first = total.stats()
    total.add(b)
    assert first == NO_STATS + a  # a snapshot, not changed by what is added after
    assert total.stats() == NO_STATS + a + b


@settings(max_examples=examples(300), deadline=None)
@given(weights=st.lists(st.integers(0, 10_000), max_size=60), n_chunks=st.integers(1, 12))
def test_balanced_bounds_cover_every_page_once_in_order(weights: list[int], n_chunks: int) -> None:
    bounds = balanced_bounds(weights, n_chunks)
    assert len(bounds) == min(n_chunks, len(weights))
    assert [i for start, stop in bounds for i in range(start, stop)] == list(range(len(weights)))
    assert all(stop > start for start, stop in bounds)


def test_balanced_bounds_put_a_heavy_page_alone() -> None:
    # 4 chunks by count would be [0..3], [4..7]: the heavy page would weigh on one worker with 3 others
    assert balanced_bounds([1, 1, 1, 1, 100, 1, 1, 1], 3) == [(0, 4), (4, 5), (5, 8)]


@settings(max_examples=examples(300), deadline=None)
@given(
    weights=st.lists(st.integers(0, 50), max_size=60),
    n_chunks=st.integers(1, 12),
    max_items=st.integers(1, 8),
    max_weight=st.integers(1, 100),
)
def test_capped_bounds_cover_every_page_once_in_order_within_the_caps(
    weights: list[int], n_chunks: int, max_items: int, max_weight: int
) -> None:
    bounds = balanced_bounds(weights, n_chunks)
    capped = capped_bounds(bounds, weights, max_items, max_weight)
    assert [i for start, stop in capped for i in range(start, stop)] == list(range(len(weights)))
    for start, stop in capped:
        assert 1 <= stop - start <= max_items
        assert stop - start == 1 or sum(max(1, w) for w in weights[start:stop]) <= max_weight
    # a cut of the balanced plan only: every balanced boundary is still a boundary
    assert {stop for _, stop in bounds} <= {stop for _, stop in capped}


def test_a_plan_without_chunk_size_caps_the_pages_of_a_chunk(tmp_path: Path) -> None:
    """2 chunks per worker, unless that makes chunks of more than ``MAX_PAGES_PER_CHUNK`` pages."""
    n = 2 * MAX_PAGES_PER_CHUNK + 1
    plan = plan_page_chunks(made_up_pages(tmp_path, [1] * n), None, workers=1, time_limit_seconds=7.0)
    assert plan.n_chunks == 3 and plan.largest <= MAX_PAGES_PER_CHUNK
    assert plan.bounds[0][0] == 0 and plan.bounds[-1][1] == n


def test_a_plan_by_chunk_size_cuts_consecutive_pages(tmp_path: Path) -> None:
    plan = plan_page_chunks(made_up_pages(tmp_path, [1] * 5), 2, workers=3, time_limit_seconds=7.0)
    assert (plan.pages, plan.n_chunks, plan.largest) == (5, 3, 2)
    chunks = list(plan.chunks())
    assert [(c.start, c.stop) for c in chunks] == [(0, 2), (2, 4), (4, 5)]
    assert [p.id for c in chunks for p in c.pages] == ["p0", "p1", "p2", "p3", "p4"]
    assert {c.time_limit_seconds for c in chunks} == {7.0}


def test_a_plan_without_chunk_size_balances_the_bytes_over_the_workers(tmp_path: Path) -> None:
    plan = plan_page_chunks(made_up_pages(tmp_path, [10, 10, 10, 10, 400, 10, 10, 10]), None, 1, 60.0)
    assert PAGE_CHUNKS_PER_WORKER == 2
    assert plan.bounds == ((0, 4), (4, 8))
    assert plan_page_chunks(PageSet("x", "directory", ()), None, 2, 60.0).largest == 0


def test_chunk_progress_counts_pages_from_zero_to_the_total() -> None:
    seen: list[tuple[int, int]] = []
    stats = ExtractionStats(0, 0, {}, {}, 0, ())
    progress = ChunkProgress(5, lambda done, total: seen.append((done, total)))
    progress.start()
    progress.advance(0, ChunkExtraction(0, [{}, {}], stats))
    progress.advance(1, ChunkExtraction(2, [{}, {}, {}], stats))
    progress.finish()
    assert seen == [(0, 5), (2, 5), (5, 5), (5, 5)]
    ChunkProgress(5, None).start()  # no reporter: nothing to call


@pytest.mark.usefixtures("no_kept_workers")
def test_joined_chunks_are_the_batch_of_one_run() -> None:
    page_set = find_pages(PAGES / "manifest.jsonl")
    whole = extract_pages(page_set, ExtractionSettings(time_limit_seconds=30.0, workers=1))
    plan = plan_page_chunks(page_set, 2, workers=1, time_limit_seconds=30.0)
    parts = [extract_chunk(chunk) for chunk in plan.chunks()]
    assert [part.start for part in parts] == [start for start, _ in plan.bounds]
    joined = join_chunks(page_set, parts, default_extractors(), 30.0)
    assert sc.dump_batch(joined.doc) == sc.dump_batch(whole.doc)
    assert joined.stats == whole.stats


@pytest.mark.usefixtures("no_kept_workers")
def test_a_kept_worker_recycled_in_the_middle_of_a_chunk_gives_the_batch_of_one_run() -> None:
    """A task runner's kept worker is replaced every ``recycle_after`` pages, wherever that falls
    (``test_pool.py`` shows the replacing); the batch is the same bytes as one run's without recycling."""
    page_set = find_pages(PAGES / "manifest.jsonl")
    whole = extract_pages(page_set, ExtractionSettings(time_limit_seconds=30.0, workers=1, recycle_after=10**6))
    recycling = ExtractionSettings(time_limit_seconds=30.0, workers=1, recycle_after=2, keep_workers=True)
    plan = plan_page_chunks(page_set, 3, workers=1, time_limit_seconds=30.0)
    parts = []
    for chunk in plan.chunks():
        result = extract_pages(PageSet("", "chunk", chunk.pages), recycling)
        parts.append(ChunkExtraction(chunk.start, result.doc["articles"], result.stats))
    # 6 pages in 2 chunks of 3, 2 pages a worker: the second chunk's first page is its first worker's second
    assert len(page_set.pages) == 6 and plan.n_chunks == 2
    joined = join_chunks(page_set, parts, default_extractors(), 30.0)
    assert sc.dump_batch(joined.doc) == sc.dump_batch(whole.doc)
    assert joined.stats == whole.stats
