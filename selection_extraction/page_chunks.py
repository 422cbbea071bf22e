"""An extraction cut into chunks of consecutive pages, as they are read (the cut never changes the written batch)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from typing import Any, Final

from selection_core.batch import ProgressCallback
from selection_extraction.extracted import ArticleSpool, ExtractionResult, ExtractionStats, build_batch
from selection_extraction.extraction import extract_readings
from selection_extraction.extractors import Extractor, default_extractors
from selection_extraction.own_process import run_in_own_process
from selection_extraction.pages import PageReadings, Reading
from selection_extraction.settings import ExtractionSettings

#: Chunks of pages per worker when no chunk size is given.
PAGE_CHUNKS_PER_WORKER: Final[int] = 2

#: Most pages, and most bytes of pages, of a chunk when no chunk size is given (its articles are held whole).
MAX_PAGES_PER_CHUNK: Final[int] = 500
MAX_PAGE_BYTES_PER_CHUNK: Final[int] = 32 * 1024 * 1024


class PageChunk:
    """Consecutive pages ``start .. stop - 1`` of one input, each with its bytes when they were read already (a
    web archive's page) or None (a page file, read where the chunk is extracted), and the run's time limit (a plain
    class, so that Prefect does not walk into it and Dask names the task by its position)."""

    __slots__ = ("readings", "start", "time_limit_seconds")

    def __init__(self, start: int, readings: Sequence[Reading], time_limit_seconds: float) -> None:
        self.start = start
        self.readings = tuple(readings)
        self.time_limit_seconds = time_limit_seconds

    @property
    def stop(self) -> int:
        return self.start + len(self.readings)

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


def page_chunks(
    readings: PageReadings, pages_per_chunk: int | None, workers: int, time_limit_seconds: float
) -> Iterator[PageChunk]:
    """The chunks of ``readings`` (made with ``read_files=False``) as they are read: ``pages_per_chunk`` pages each
    when given, else about :data:`PAGE_CHUNKS_PER_WORKER` chunks per worker of about equal bytes, none over
    :data:`MAX_PAGES_PER_CHUNK` pages or :data:`MAX_PAGE_BYTES_PER_CHUNK` bytes (but a larger page alone)."""
    if pages_per_chunk is not None and pages_per_chunk < 1:
        raise ValueError(f"chunk_size must be at least 1, got {pages_per_chunk}")
    most_pages, most_bytes = pages_per_chunk or MAX_PAGES_PER_CHUNK, MAX_PAGE_BYTES_PER_CHUNK
    if pages_per_chunk is None:
        most_bytes = min(most_bytes, max(1, -(-readings.input_bytes() // (PAGE_CHUNKS_PER_WORKER * workers))))
    chunk: list[Reading] = []
    start = weight = 0
    for page, data in readings:
        size = len(data) if isinstance(data, bytes) else page.weight if data is None else 1
        if chunk and (len(chunk) >= most_pages or (pages_per_chunk is None and weight + size > most_bytes)):
            yield PageChunk(start, chunk, time_limit_seconds)
            start, chunk, weight = start + len(chunk), [], 0
        chunk.append((page, data))
        weight += size
    if chunk:
        yield PageChunk(start, chunk, time_limit_seconds)


def extract_chunk(chunk: PageChunk) -> ChunkExtraction:
    """Extract one chunk with one extractor process, kept for the next chunk; in a daemonic process (a Dask
    worker under its nanny), where multiprocessing refuses children, in a process of its own."""
    if multiprocessing.current_process().daemon:
        return run_in_own_process(_extract_chunk_here, chunk)
    return _extract_chunk_here(chunk)


def _extract_chunk_here(chunk: PageChunk, _report: ProgressCallback | None = None) -> ChunkExtraction:
    settings = ExtractionSettings(time_limit_seconds=chunk.time_limit_seconds, workers=1, keep_workers=True)
    articles: list[dict[str, Any]] = []
    stats = extract_readings(chunk.readings, articles.append, settings, default_extractors())
    return ChunkExtraction(chunk.start, articles, stats)


def spool_chunk(spool: ArticleSpool, part: ChunkExtraction) -> None:
    """Hand a chunk's articles to ``spool`` (the chunks in page order) and drop them from the chunk; its counts stay."""
    for article in part.articles:
        spool.add(article)
    part.articles = []


def joined_root(
    readings: PageReadings,
    stats: ExtractionStats,
    extractors: Sequence[Extractor],
    time_limit_seconds: float,
) -> ExtractionResult:
    """The batch's root with an empty ``articles`` list, from the counts of the whole input, as one run's."""
    settings = ExtractionSettings(time_limit_seconds=time_limit_seconds)
    return ExtractionResult(build_batch(readings.counted, [], extractors, settings, stats), stats)
