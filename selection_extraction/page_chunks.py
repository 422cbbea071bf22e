"""An extraction cut into chunks of consecutive pages (the plan never changes the written batch)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from selection_core.batch import ProgressCallback
from selection_extraction.extracted import ArticleSpool, ExtractionResult, ExtractionStats, build_batch
from selection_extraction.extraction import extract_pages
from selection_extraction.extractors import Extractor
from selection_extraction.own_process import Report, run_in_own_process
from selection_extraction.pages import Page, PageSet
from selection_extraction.settings import ExtractionSettings

#: Chunks of pages per worker when no chunk size is given.
PAGE_CHUNKS_PER_WORKER: Final[int] = 2

#: Most pages, and most bytes of pages, of a chunk when no chunk size is given (its articles are held whole).
MAX_PAGES_PER_CHUNK: Final[int] = 500
MAX_PAGE_BYTES_PER_CHUNK: Final[int] = 32 * 1024 * 1024


class PageChunk:
    """Consecutive pages ``start .. stop - 1`` of one input, and the run's time limit (a plain class, so that Prefect
    does not walk into it and Dask names the task by its position)."""

    __slots__ = ("pages", "start", "time_limit_seconds")

    def __init__(self, start: int, pages: Sequence[Page], time_limit_seconds: float) -> None:
        self.start = start
        self.pages = tuple(pages)
        self.time_limit_seconds = time_limit_seconds

    @property
    def stop(self) -> int:
        return self.start + len(self.pages)

    def __repr__(self) -> str:
        return f"PageChunk(start={self.start}, stop={self.stop})"

    def __dask_tokenize__(self) -> tuple[str, int, int]:
        return ("content-selection-page-chunk", self.start, self.stop)


class ChunkExtraction:
    """The articles of one :class:`PageChunk`, in page order, and the chunk's counts."""

    __slots__ = ("articles", "pages", "start", "stats")

    def __init__(self, start: int, articles: list[dict[str, Any]], stats: ExtractionStats) -> None:
        self.start = start
        self.articles = articles
        self.pages = len(articles)  # still known once the articles were spooled
        self.stats = stats

    def __repr__(self) -> str:
        return f"ChunkExtraction(start={self.start}, n={self.pages})"


def balanced_bounds(weights: Sequence[int], n_chunks: int) -> list[tuple[int, int]]:
    """Cut consecutive items into ``n_chunks`` non-empty chunks (fewer if there are fewer items) of about equal weight:
    the cuts fall where the running total is nearest to each multiple of ``total / n_chunks``."""
    n = len(weights)
    n_chunks = max(1, min(n_chunks, n))
    if n == 0:
        return []
    weights = [max(1, w) for w in weights]
    total = sum(weights)
    bounds: list[tuple[int, int]] = []
    start = 0
    running = 0
    for k in range(1, n_chunks):
        target = total * k // n_chunks
        end = start + 1
        running += weights[start]
        # take the next item while that brings the running total nearer the target,
        # leaving one item at least for each chunk still to come
        while end < n - (n_chunks - k) and 2 * running + weights[end] <= 2 * target:
            running += weights[end]
            end += 1
        bounds.append((start, end))
        start = end
    bounds.append((start, n))
    return bounds


def capped_bounds(
    bounds: Sequence[tuple[int, int]], weights: Sequence[int], max_items: int, max_weight: int
) -> list[tuple[int, int]]:
    """``bounds`` with every chunk cut, greedily from its start, into pieces of at most ``max_items`` items and
    ``max_weight`` in weight (an item heavier than that is a piece alone)."""
    capped: list[tuple[int, int]] = []
    for start, stop in bounds:
        piece, weight = start, 0
        for index in range(start, stop):
            w = max(1, weights[index])
            if index > piece and (index - piece >= max_items or weight + w > max_weight):
                capped.append((piece, index))
                piece, weight = index, 0
            weight += w
        capped.append((piece, stop))
    return capped


@dataclass(frozen=True)
class PageChunkPlan:
    """How one input is cut into chunks of consecutive pages."""

    page_set: PageSet
    bounds: tuple[tuple[int, int], ...]
    time_limit_seconds: float

    @property
    def pages(self) -> int:
        return len(self.page_set.pages)

    @property
    def n_chunks(self) -> int:
        return len(self.bounds)

    @property
    def largest(self) -> int:
        """Pages of the largest chunk (0 for no page)."""
        return max((stop - start for start, stop in self.bounds), default=0)

    def chunks(self) -> Iterator[PageChunk]:
        for start, stop in self.bounds:
            yield PageChunk(start, self.page_set.pages[start:stop], self.time_limit_seconds)


def plan_page_chunks(
    page_set: PageSet, pages_per_chunk: int | None, workers: int, time_limit_seconds: float
) -> PageChunkPlan:
    """The chunks of ``page_set``: ``pages_per_chunk`` pages each when given, else
    :data:`PAGE_CHUNKS_PER_WORKER` chunks per worker of about equal bytes, or more, so that none holds more than
    :data:`MAX_PAGES_PER_CHUNK` pages or :data:`MAX_PAGE_BYTES_PER_CHUNK` bytes (but a larger page alone)."""
    pages = page_set.pages
    if pages_per_chunk is not None:
        if pages_per_chunk < 1:
            raise ValueError(f"chunk_size must be at least 1, got {pages_per_chunk}")
        bounds = [(start, min(start + pages_per_chunk, len(pages))) for start in range(0, len(pages), pages_per_chunk)]
    else:
        weights = [page.weight for page in pages]
        needed = max(-(-len(pages) // MAX_PAGES_PER_CHUNK), -(-sum(weights) // MAX_PAGE_BYTES_PER_CHUNK))
        balanced = balanced_bounds(weights, max(PAGE_CHUNKS_PER_WORKER * workers, needed))
        bounds = capped_bounds(balanced, weights, MAX_PAGES_PER_CHUNK, MAX_PAGE_BYTES_PER_CHUNK)
    return PageChunkPlan(page_set, tuple(bounds), time_limit_seconds)


class ChunkProgress:
    """``progress(done, total)`` in pages, advanced as chunks complete (in order): 0 at start, ``total`` at the end."""

    def __init__(self, total: int, progress: ProgressCallback | None) -> None:
        self.total = total
        self.done = 0
        self._progress = progress

    def start(self) -> None:
        self._report(0)

    def advance(self, _index: int, chunk: ChunkExtraction) -> None:
        self.done += chunk.pages
        self._report(self.done)

    def finish(self) -> None:
        self._report(self.total)

    def _report(self, done: int) -> None:
        if self._progress is not None:
            self._progress(done, self.total)


def extract_chunk(chunk: PageChunk) -> ChunkExtraction:
    """Extract one chunk with one extractor process, kept for the next chunk; in a daemonic process (a Dask
    worker under its nanny), where multiprocessing refuses children, in a process of its own."""
    if multiprocessing.current_process().daemon:
        return run_in_own_process(_extract_chunk_here, chunk)
    return _extract_chunk_here(chunk)


def _extract_chunk_here(chunk: PageChunk, _report: Report | None = None) -> ChunkExtraction:
    settings = ExtractionSettings(time_limit_seconds=chunk.time_limit_seconds, workers=1, keep_workers=True)
    result = extract_pages(PageSet("", "chunk", chunk.pages), settings)
    return ChunkExtraction(chunk.start, result.doc["articles"], result.stats)


def spool_chunk(spool: ArticleSpool, part: ChunkExtraction) -> None:
    """Hand a chunk's articles to ``spool`` (the chunks in page order) and drop them from the chunk; its counts stay."""
    for article in part.articles:
        spool.add(article)
    part.articles = []


def joined_root(
    page_set: PageSet,
    stats: ExtractionStats,
    extractors: Sequence[Extractor],
    time_limit_seconds: float,
) -> ExtractionResult:
    """The batch's root with an empty ``articles`` list, from the counts of the whole input, as one run's."""
    settings = ExtractionSettings(time_limit_seconds=time_limit_seconds)
    return ExtractionResult(build_batch(page_set, [], extractors, settings, stats), stats)
