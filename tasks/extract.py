"""Prefect tasks of the extract step: thin wrappers around :mod:`selection_extraction.engine`.

* ``check-extract-paths``: resolve the pages and the output, inside the data root when one is set;
* ``find-pages``: list the pages of a directory or a manifest (retried on transient I/O only);
* ``extract-pages``: the three extractors over every page, in worker processes,
  with an ``extraction-progress`` artifact. Not retried: a page or an extractor
  that fails is already recorded in its article, and a retry would redo the batch;
* ``write-extracted-batch``: the core's atomic write (retried on transient I/O only);
* ``publish-extraction-artifacts``: table ``extraction-pages`` and markdown ``extraction-summary``.

None computes a cache key or persists its result: inputs and outputs are as
large as the batch. The rows and the markdown are built by pure functions
(:func:`page_rows`, :func:`extraction_markdown`), testable without Prefect.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final
from uuid import UUID

from prefect import task
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext

import selection_core as sc
from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_core.markdown import md_cell
from selection_extraction.engine import (
    ExtractionResult,
    ExtractionSettings,
    ExtractionStats,
    ExtractPaths,
    Page,
    PageSet,
    extract_pages,
    find_pages,
    resolve_extract_paths,
)
from selection_storage.chunks import chunk_bounds
from selection_storage.files import write_atomic
from tasks.batch import WrittenFile
from tasks.logs import run_logger
from tasks.options import chunk_run_namer, io_task_options

#: Artifact keys (lowercase with dashes).
PAGES_ARTIFACT_KEY: Final[str] = "extraction-pages"
EXTRACTION_SUMMARY_ARTIFACT_KEY: Final[str] = "extraction-summary"
EXTRACTION_PROGRESS_ARTIFACT_KEY: Final[str] = "extraction-progress"

#: Longest error shown in a table cell.
MAX_ERROR_CELL: Final[int] = 160

_IO_TASK_OPTIONS: dict[str, Any] = io_task_options()


@task(name="check-extract-paths", cache_policy=NO_CACHE, persist_result=False)
def check_extract_paths(pages: str, output_path: str | None = None, data_root: str | None = None) -> ExtractPaths:
    """Resolve and check the run's paths (see :func:`resolve_extract_paths`). Never retried."""
    return resolve_extract_paths(pages, output_path, data_root)


@task(name="find-pages", **_IO_TASK_OPTIONS)
def find_pages_task(pages: Path, label: str | None = None) -> PageSet:
    """List the pages of a directory (sorted by relative path) or of a manifest (in its order).

    Args:
        pages: The resolved input.
        label: The input as the user gave it, recorded in the batch.

    Raises:
        InvalidPagesError: missing input, no page, malformed manifest (not retried).
    """
    page_set = find_pages(pages, label)
    run_logger().info("Found %d pages in %s (%s)", len(page_set.pages), pages, page_set.kind)
    return page_set


class _Progress:
    """``progress(done, total)`` -> the ``extraction-progress`` artifact, at most one update per percent."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._id: UUID | None = None
        self._last = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 if total <= 0 else (100 * done) // total
        if percent <= self._last:
            return
        try:
            if self._id is None:
                self._id = create_progress_artifact(
                    progress=float(percent), key=EXTRACTION_PROGRESS_ARTIFACT_KEY, description=self._description
                )
            else:
                update_progress_artifact(artifact_id=self._id, progress=float(percent))
            self._last = percent
        except Exception as exc:  # noqa: BLE001 - progress is informational
            run_logger().warning("Could not update the progress artifact: %s", exc)


@task(name="extract-pages", cache_policy=NO_CACHE, persist_result=False)
def extract_pages_task(page_set: PageSet, time_limit_seconds: float, workers: int | None = None) -> ExtractionResult:
    """Run trafilatura, newspaper4k and readability on every page, in worker processes.

    Inside a run, a progress artifact (key ``extraction-progress``) follows the
    pages; through ``.fn()`` no artifact is made.

    Args:
        page_set: The pages, from ``find-pages``.
        time_limit_seconds: Seconds one extractor may spend on one page.
        workers: Worker processes; None for one per core.

    Returns:
        The batch document and the run's counts.
    """
    progress = None
    if TaskRunContext.get() is not None:
        progress = _Progress(f"Extracting {len(page_set.pages)} pages of {Path(page_set.source).name}")
    settings = ExtractionSettings(time_limit_seconds=time_limit_seconds, workers=workers)
    result = extract_pages(page_set, settings, progress=progress)
    log_extraction(result.stats)
    return result


def log_extraction(stats: ExtractionStats) -> None:
    """Log a run's counts, and a warning when an extractor tried to use the network."""
    logger = run_logger()
    logger.info(
        "Extracted %d pages (%d unreadable); errors: %s; timeouts: %s",
        stats.pages,
        stats.unreadable_pages,
        ", ".join(f"{k} {v}" for k, v in stats.errors.items()),
        ", ".join(f"{k} {v}" for k, v in stats.timeouts.items()),
    )
    if stats.network_attempts:
        logger.warning(
            "Blocked %d network attempts of the extractors: %s",
            len(stats.network_attempts),
            "; ".join(stats.network_attempts[:5]),
        )


@task(name="write-extracted-batch", **_IO_TASK_OPTIONS)
def write_extracted_batch(doc: dict[str, Any], output_path: Path) -> WrittenFile:
    """Write the extracted batch atomically, in the selection stage's own format.

    Raises:
        OutputPathError: the location is refused (not retried).
        WriteError: writing failed; retried when transient.
    """
    data = sc.dump_batch(doc)
    write_atomic(output_path, data)
    written = WrittenFile(Path(output_path), hashlib.sha256(data).hexdigest(), len(data))
    run_logger().info("Wrote %s: %d bytes, sha256 %s", output_path, written.size_bytes, written.sha256)
    return written


def page_rows(doc: dict[str, Any], max_rows: int) -> list[dict[str, Any]]:
    """One row per page (the first ``max_rows``): ids, decoding, and per extractor its text length and error.

    >>> page_rows({"articles": []}, 10)
    []
    """
    rows: list[dict[str, Any]] = []
    for index, article in enumerate(doc["articles"][: max(max_rows, 0)]):
        row: dict[str, Any] = {
            "index": index,
            "id": article.get("id"),
            "url": article.get("url"),
            "path": article.get("path"),
            "encoding": article.get("encoding"),
            "encoding_source": article.get("encoding_source"),
        }
        for name in EXTRACTORS:
            block = article.get(name) or {}
            text = block.get(TEXT_FIELDS[name])
            error = block.get("error")
            row[f"{name}_chars"] = len(text) if isinstance(text, str) else 0
            row[f"{name}_error"] = (
                (error[: MAX_ERROR_CELL - 1] + "…") if isinstance(error, str) and len(error) > MAX_ERROR_CELL else error
            )
        rows.append(row)
    return rows


def extraction_markdown(
    doc: dict[str, Any], stats: ExtractionStats, output_path: Path, output_sha256: str, shown_rows: int, max_rows: int
) -> str:
    """The ``extraction-summary`` markdown: counts, output, versions and settings."""
    meta = doc.get("extraction", {})
    lines = [
        f"# Extraction: {md_cell(Path(str(meta.get('input', ''))).name or str(meta.get('input', '')))}",
        "",
        "| | |",
        "|---|---|",
        f"| Input | `{md_cell(str(meta.get('input', '')))}` ({meta.get('input_kind', '')}) |",
        f"| Pages | {stats.pages} |",
        f"| Unreadable pages | {stats.unreadable_pages} |",
        f"| Output | `{md_cell(str(output_path))}` |",
        f"| Output SHA-256 | `{output_sha256}` |",
        f"| Time limit per extractor and page | {meta.get('time_limit_seconds')} s |",
        f"| Worker crashes | {stats.worker_crashes} |",
        f"| Network attempts blocked | {len(stats.network_attempts)} |",
        "",
        "## Extractors",
        "",
        "| Extractor | Version | Errors | Timeouts | Call |",
        "|---|---|---:|---:|---|",
    ]
    described = meta.get("extractors", {})
    for name in EXTRACTORS:
        info = described.get(name, {})
        lines.append(
            f"| {name} | {info.get('distribution', '')} {info.get('version', '')} | {stats.errors.get(name, 0)} "
            f"| {stats.timeouts.get(name, 0)} | `{md_cell(str(info.get('call', '')))}` |"
        )
    lines += [
        "",
        f"Decoding: {md_cell(str(meta.get('decoding', '')))}.",
        "",
        f"The table `{PAGES_ARTIFACT_KEY}` shows {shown_rows} of {stats.pages} pages (max_table_rows={max_rows}).",
        "",
    ]
    return "\n".join(lines)


@task(
    name="publish-extraction-artifacts", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE, persist_result=False
)
def publish_extraction_artifacts(
    doc: dict[str, Any], stats: ExtractionStats, *, output_path: Path, output_sha256: str, max_rows: int
) -> dict[str, UUID]:
    """Create the ``extraction-pages`` table and the ``extraction-summary`` markdown.

    Returns:
        The artifact ids by key.
    """
    rows = page_rows(doc, max_rows)
    table_id = create_table_artifact(
        table=rows,
        key=PAGES_ARTIFACT_KEY,
        description=(
            f"Extraction of {output_path.name}: {len(rows)} of {stats.pages} pages shown "
            f"(capped at max_table_rows={max_rows})."
        ),
    )
    markdown_id = create_markdown_artifact(
        markdown=extraction_markdown(doc, stats, output_path, output_sha256, len(rows), max_rows),
        key=EXTRACTION_SUMMARY_ARTIFACT_KEY,
        description=f"Extraction summary of {output_path.name}",
    )
    return {PAGES_ARTIFACT_KEY: table_id, EXTRACTION_SUMMARY_ARTIFACT_KEY: markdown_id}


# --------------------------------------------------------------------------- chunked extraction

#: Name of the task that extracts one chunk of pages (its runs are ``extract-chunk-<start>``).
PAGE_CHUNK_TASK_NAME: Final[str] = "extract-chunk"

#: Chunks of pages per worker when no chunk size is given. Fewer than for
#: selection (``tasks.chunks.CHUNKS_PER_WORKER``): each chunk costs a task-run
#: submission (0.2-0.7 s of CPU in the flow process). When each chunk also started
#: a fresh extraction worker, 4 chunks per worker took 34.8-42.6 s against
#: 28.6-32.7 s for 2 on the 181 real pages; with the worker kept between chunks,
#: 4 per worker took 31.8 and 32.0 s against 32.8 and 32.8 s for 2 on the process
#: pool, within the machine's noise (``docs/performance.md``), so 2 stays.
PAGE_CHUNKS_PER_WORKER: Final[int] = 2


class PageChunk:
    """Consecutive pages ``start .. start + len(pages) - 1`` of one input, and the run's time limit.

    A plain class on purpose, like :class:`tasks.chunks.ChunkJob`: Prefect
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

    __slots__ = ("articles", "start", "stats")

    def __init__(self, start: int, articles: list[dict[str, Any]], stats: ExtractionStats) -> None:
        self.start = start
        self.articles = articles
        self.stats = stats

    def __len__(self) -> int:
        return len(self.articles)

    def __repr__(self) -> str:
        return f"ChunkExtraction(start={self.start}, n={len(self.articles)})"


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


def page_chunk_bounds(pages: Sequence[Page], pages_per_chunk: int | None, n_chunks: int) -> list[tuple[int, int]]:
    """The chunks of an extraction run: ``pages_per_chunk`` pages each when given, else
    ``n_chunks`` chunks of about equal bytes of page files (the cost of a page grows
    with its size, and a chunk that runs long keeps its worker's core busy alone at the
    end). Only which pages go together depends on this, never the written batch."""
    if pages_per_chunk is not None:
        return chunk_bounds(len(pages), pages_per_chunk)
    return balanced_bounds([_file_size(page.file) for page in pages], n_chunks)


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # read (and reported) by the extraction itself
        return 1


def combine_stats(parts: Sequence[ExtractionStats]) -> ExtractionStats:
    """The counts of a whole run from those of its chunks, in chunk order.

    >>> s = ExtractionStats(2, 1, {"readability": 1}, {}, 0, ("x",))
    >>> both = combine_stats([s, s])
    >>> both.pages, both.errors["readability"], both.network_attempts
    (4, 2, ('x', 'x'))
    """
    errors = dict.fromkeys(EXTRACTORS, 0)
    timeouts = dict.fromkeys(EXTRACTORS, 0)
    for part in parts:
        for name, count in part.errors.items():
            errors[name] = errors.get(name, 0) + count
        for name, count in part.timeouts.items():
            timeouts[name] = timeouts.get(name, 0) + count
    return ExtractionStats(
        pages=sum(p.pages for p in parts),
        unreadable_pages=sum(p.unreadable_pages for p in parts),
        errors=errors,
        timeouts=timeouts,
        worker_crashes=sum(p.worker_crashes for p in parts),
        network_attempts=tuple(a for p in parts for a in p.network_attempts),
    )


@contextlib.contextmanager
def _may_have_children() -> Iterator[None]:
    """Let this process start the extraction pool even when it is daemonic.

    Dask's worker processes are daemonic by default, and :mod:`multiprocessing`
    refuses to start children from a daemonic process (so that they cannot be
    orphaned). The pool's own workers are daemonic and exit when their pipe to
    this process closes, so lifting the flag for the duration of the chunk is safe.
    """
    config = multiprocessing.current_process()._config  # noqa: SLF001 - no public way
    daemon = config.get("daemon")
    if not daemon:
        yield
        return
    config["daemon"] = False
    try:
        yield
    finally:
        config["daemon"] = daemon


@task(
    name=PAGE_CHUNK_TASK_NAME,
    task_run_name=chunk_run_namer(PAGE_CHUNK_TASK_NAME),
    cache_policy=NO_CACHE,
    persist_result=False,
)
def extract_page_chunk(chunk: PageChunk) -> ChunkExtraction:
    """Extract one chunk of pages with one worker process, under the same per-call time limit.

    Not retried, like ``extract-pages``: failures are recorded in the articles.

    Args:
        chunk: Consecutive pages of the input, the index of the first, and the
            seconds one extractor may spend on one page.

    Returns:
        The chunk's articles, in page order, and its counts.
    """
    # keep_workers: the runner's worker process extracts chunk after chunk, so its one
    # extraction worker is kept for the next chunk instead of being started anew for
    # each (a fork, and about 0.3 s of the libraries warming up on the first page).
    settings = ExtractionSettings(time_limit_seconds=chunk.time_limit_seconds, workers=1, keep_workers=True)
    with _may_have_children():
        result = extract_pages(PageSet("", "chunk", chunk.pages), settings)
    run_logger().debug("Extracted pages %d..%d", chunk.start, chunk.stop - 1)
    return ChunkExtraction(chunk.start, result.doc["articles"], result.stats)
