"""An extraction cut into chunks of consecutive pages: planning the chunks, extracting one, joining them.

The flows' parallel task runners extract one :class:`PageChunk` per task run
(:func:`extract_chunk`, with one worker process under the run's time limit) and
join the :class:`ChunkExtraction` s in page order: in memory (:func:`join_chunks`),
or, so that the run never holds the batch, by handing each chunk's articles to an
:class:`~selection_extraction.batch.ArticleSpool` as it completes (:func:`spool_chunk`)
and writing the batch from the spool with the joined root (:func:`joined_root`).
Only which pages go together depends on the plan, never the written batch: the
bytes are the same whichever runner and chunk size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from selection_core.batch import ProgressCallback
from selection_extraction.batch import ArticleSpool, ExtractionResult, ExtractionStats, build_batch, combine_stats
from selection_extraction.engine import extract_pages
from selection_extraction.extractors import Extractor
from selection_extraction.pages import Page, PageSet
from selection_extraction.pool import allow_child_processes
from selection_extraction.settings import ExtractionSettings


def chunk_bounds(n_items: int, chunk_size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk, in order; the last one may be shorter.

    >>> chunk_bounds(7, 3), chunk_bounds(0, 3)
    ([(0, 3), (3, 6), (6, 7)], [])
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    return [(start, min(start + chunk_size, n_items)) for start in range(0, n_items, chunk_size)]


#: Chunks of pages per worker when no chunk size is given. Fewer than the
#: selection's chunks per worker: each chunk costs a task-run submission in the
#: flow process, and more, smaller chunks did not balance the workers measurably
#: better (see ``docs/performance.md``).
PAGE_CHUNKS_PER_WORKER: Final[int] = 2

#: Most pages, and most bytes of pages (:attr:`~selection_extraction.pages.Page.weight`), of a
#: chunk when no chunk size is given: a chunk's articles are held whole by its worker and, until
#: they are spooled, by the flow, so the cap bounds what a run holds whatever the page set's size.
MAX_PAGES_PER_CHUNK: Final[int] = 500
MAX_PAGE_BYTES_PER_CHUNK: Final[int] = 32 * 1024 * 1024


class PageChunk:
    """Consecutive pages ``start .. start + len(pages) - 1`` of one input, and the run's time limit.

    A plain class on purpose, like the selection's chunk jobs: Prefect
    does not walk into it looking for futures, and Dask names the task by its
    position instead of hashing it. Only page descriptions travel (ids, URLs,
    paths); each worker reads the page files itself.
    """

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
    """The articles of one :class:`PageChunk`, in page order, and the chunk's counts (a plain container)."""

    __slots__ = ("articles", "pages", "start", "stats")

    def __init__(self, start: int, articles: list[dict[str, Any]], stats: ExtractionStats) -> None:
        self.start = start
        self.articles = articles
        self.pages = len(articles)  # still known once the articles were spooled (:func:`spool_chunk`)
        self.stats = stats

    def __len__(self) -> int:
        """Pages of the chunk."""
        return self.pages

    def __repr__(self) -> str:
        return f"ChunkExtraction(start={self.start}, n={len(self)})"


def split_pages(page_set: PageSet, bounds: Sequence[tuple[int, int]], time_limit_seconds: float) -> Iterator[PageChunk]:
    """The input's pages as :class:`PageChunk` s, one per ``(start, stop)`` of ``bounds``, in order."""
    for start, stop in bounds:
        yield PageChunk(start, page_set.pages[start:stop], time_limit_seconds)


def balanced_bounds(weights: Sequence[int], n_chunks: int) -> list[tuple[int, int]]:
    """Cut consecutive items into ``n_chunks`` runs (fewer if there are fewer items) of about equal weight.

    Every run holds at least one item; the cuts fall where the running total
    is nearest to each multiple of ``total / n_chunks`` (integer arithmetic).

    >>> balanced_bounds([1, 1, 1, 1, 8, 1, 1, 1], 2)
    [(0, 4), (4, 8)]
    >>> balanced_bounds([5, 5, 5], 5), balanced_bounds([], 2)
    ([(0, 1), (1, 2), (2, 3)], [])
    """
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
    """``bounds`` with every run cut, greedily from its start, into pieces of at most ``max_items``
    items and ``max_weight`` in weight (an item heavier than that is a piece alone).

    >>> capped_bounds([(0, 5), (5, 6)], [1, 1, 1, 1, 1, 9], max_items=2, max_weight=10)
    [(0, 2), (2, 4), (4, 5), (5, 6)]
    >>> capped_bounds([(0, 3)], [4, 7, 2], max_items=10, max_weight=5)
    [(0, 1), (1, 2), (2, 3)]
    """
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


def page_chunk_bounds(pages: Sequence[Page], pages_per_chunk: int | None, n_chunks: int) -> list[tuple[int, int]]:
    """The chunks of an extraction run: ``pages_per_chunk`` pages each when given, else
    ``n_chunks`` chunks of about equal bytes of pages (the cost of a page grows
    with its size, and a chunk that runs long keeps its worker's core busy alone at the
    end), more when needed so that none holds more than :data:`MAX_PAGES_PER_CHUNK` pages
    or :data:`MAX_PAGE_BYTES_PER_CHUNK` bytes of pages (but a page larger than that alone).
    Only which pages go together depends on this, never the written batch."""
    if pages_per_chunk is not None:
        return chunk_bounds(len(pages), pages_per_chunk)
    weights = [page.weight for page in pages]
    needed = max(-(-len(pages) // MAX_PAGES_PER_CHUNK), -(-sum(weights) // MAX_PAGE_BYTES_PER_CHUNK))
    bounds = balanced_bounds(weights, max(n_chunks, needed))
    return capped_bounds(bounds, weights, MAX_PAGES_PER_CHUNK, MAX_PAGE_BYTES_PER_CHUNK)


@dataclass(frozen=True)
class PageChunkPlan:
    """How one input is cut into chunks of consecutive pages, for a runner with ``workers`` workers."""

    page_set: PageSet
    bounds: tuple[tuple[int, int], ...]
    time_limit_seconds: float

    @property
    def pages(self) -> int:
        """Pages of the input."""
        return len(self.page_set.pages)

    @property
    def n_chunks(self) -> int:
        """Chunks of the plan."""
        return len(self.bounds)

    @property
    def largest(self) -> int:
        """Pages of the largest chunk (0 for no page)."""
        return max((stop - start for start, stop in self.bounds), default=0)

    def chunks(self) -> Iterator[PageChunk]:
        """The chunks, in page order."""
        return split_pages(self.page_set, self.bounds, self.time_limit_seconds)


def plan_page_chunks(
    page_set: PageSet, pages_per_chunk: int | None, workers: int, time_limit_seconds: float
) -> PageChunkPlan:
    """The chunks of ``page_set``: ``pages_per_chunk`` pages each when given, else
    :data:`PAGE_CHUNKS_PER_WORKER` chunks per worker of about equal bytes, or more, smaller
    ones for a large input (:func:`page_chunk_bounds`)."""
    bounds = page_chunk_bounds(page_set.pages, pages_per_chunk, PAGE_CHUNKS_PER_WORKER * workers)
    return PageChunkPlan(page_set, tuple(bounds), time_limit_seconds)


class ChunkProgress:
    """``progress(done, total)`` in pages, advanced as chunks complete (in order): 0 at start, ``total`` at the end."""

    def __init__(self, total: int, progress: ProgressCallback | None) -> None:
        self.total = total
        self.done = 0
        self._progress = progress

    def start(self) -> None:
        """Report that no page is done yet."""
        self._report(0)

    def advance(self, _index: int, chunk: ChunkExtraction) -> None:
        """Count the pages of a chunk that completed (an ``on_result`` callback)."""
        self.done += len(chunk)
        self._report(self.done)

    def finish(self) -> None:
        """Report every page done."""
        self._report(self.total)

    def _report(self, done: int) -> None:
        if self._progress is not None:
            self._progress(done, self.total)


def extract_chunk(chunk: PageChunk) -> ChunkExtraction:
    """Extract one chunk of pages with one worker process, under the same per-call time limit.

    The worker is kept for the next chunk (``keep_workers``): a task runner's worker
    process extracts chunk after chunk, and a kept worker spares each chunk a fork and
    the libraries' warming up on their first page. Works in a daemonic process too
    (a Dask worker; :func:`~selection_extraction.pool.allow_child_processes`).
    """
    settings = ExtractionSettings(time_limit_seconds=chunk.time_limit_seconds, workers=1, keep_workers=True)
    with allow_child_processes():
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
    """The batch's root with an empty ``articles`` list (for :meth:`ArticleSpool.write
    <selection_extraction.batch.ArticleSpool.write>`), from the counts of the whole input
    (its chunks' added up: :class:`~selection_extraction.batch.StatsTotal`): as one run's."""
    settings = ExtractionSettings(time_limit_seconds=time_limit_seconds)
    return ExtractionResult(build_batch(page_set, [], extractors, settings, stats), stats)


def join_chunks(
    page_set: PageSet,
    parts: Sequence[ChunkExtraction],
    extractors: Sequence[Extractor],
    time_limit_seconds: float,
) -> ExtractionResult:
    """The batch of the whole input from its chunks' extractions, in page order: the same as one run's."""
    result = joined_root(page_set, combine_stats([part.stats for part in parts]), extractors, time_limit_seconds)
    result.doc["articles"] = [article for part in parts for article in part.articles]
    return result
