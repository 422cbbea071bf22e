"""The extract step's run: pages in, the batch that the selection stage reads out.

Plain Python (no Prefect): the CLI (``content-selection extract``), the flows
``extract-articles`` and ``extract-and-select`` and the quality benchmark all
call :func:`extract_pages` / :func:`extract_to_file`.

**Per page**: the bytes are read (and gunzipped) once in this process
(:mod:`selection_extraction.pages`) and decoded once (:mod:`selection_extraction.decode`);
the same string goes to the three extractors (:mod:`selection_extraction.adapters`,
described by :mod:`selection_extraction.extractors`), which run in worker processes
across the machine's cores, each call under a time limit that really stops it
(:mod:`selection_extraction.pool`). The articles and the batch document are built by
:mod:`selection_extraction.batch`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from selection_core.batch import ProgressCallback
from selection_core.config import EXTRACTORS
from selection_extraction.batch import (
    ExtractionResult,
    ExtractionStats,
    build_article,
    build_batch,
    count_outcomes,
    write_batch,
)
from selection_extraction.decode import decode_html
from selection_extraction.extractors import (
    INSTALL_HINT,
    WORKER_INITIALIZER,
    WORKER_PRELOAD,
    Extractor,
    ExtractorsUnavailableError,
    check_extractors,
    default_extractors,
)
from selection_extraction.pages import (
    UNREADABLE_PAGE_ERRORS,
    PageReader,
    PageSet,
    find_pages,
    read_error,
)
from selection_extraction.paths import extracted_path
from selection_extraction.pool import Outcome, PageJob, WorkerSetupError, default_workers, run_jobs
from selection_extraction.settings import ExtractionSettings
from selection_storage.paths import resolve_output_path


@dataclass(frozen=True)
class ExtractRunResult:
    """What :func:`extract_to_file` wrote."""

    output_path: Path
    sha256: str
    size_bytes: int
    result: ExtractionResult


def extract_pages(
    page_set: PageSet,
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
) -> ExtractionResult:
    """Extract every page with the three extractors; return the batch document.

    Args:
        page_set: From :func:`~selection_extraction.pages.find_pages`.
        settings: Time limit, page size limit, workers.
        extractors: The three extractors (default: the real ones).
        progress: Called with ``(pages done, total)`` as pages complete.

    Returns:
        The batch and the run's counts (timeouts, crashes, network attempts).
    """
    settings = settings or ExtractionSettings()
    extractors = tuple(extractors) if extractors is not None else default_extractors()
    check_extractors(extractors)
    functions = {e.name: e.function for e in extractors}
    pages = page_set.pages
    total = len(pages)
    outcomes: list[dict[str, Outcome]] = [{} for _ in pages]
    encodings: list[tuple[str | None, str | None]] = [(None, None)] * total
    unreadable = 0
    done = 0

    def page_done() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    def jobs() -> Iterator[PageJob]:
        nonlocal unreadable
        with PageReader(settings.max_page_bytes) as reader:
            for index, page in enumerate(pages):
                try:
                    data = reader.read(page)
                except UNREADABLE_PAGE_ERRORS as exc:
                    unreadable += 1
                    error = read_error(page, exc)
                    outcomes[index] = {name: Outcome("", None, error) for name in EXTRACTORS}
                    page_done()
                    continue
                decoded = decode_html(data, page.encoding)
                del data
                encodings[index] = (decoded.encoding, decoded.source.value)
                yield PageJob(index, decoded.html, page.url, list(EXTRACTORS))

    def on_outcome(index: int, name: str, outcome: Outcome) -> None:
        outcomes[index][name] = outcome
        if len(outcomes[index]) == len(EXTRACTORS):
            page_done()

    if progress is not None:
        progress(0, total)
    workers = min(settings.workers or default_workers(), max(total, 1))
    try:
        pool_stats = run_jobs(
            jobs(),
            functions,
            on_outcome,
            workers=workers,
            time_limit=settings.time_limit_seconds,
            recycle_after=settings.recycle_after,
            preload=WORKER_PRELOAD,
            initializer=WORKER_INITIALIZER,
            keep_workers=settings.keep_workers,
        )
    except WorkerSetupError as exc:
        raise ExtractorsUnavailableError(f"{exc}; reinstall the extractor libraries with: {INSTALL_HINT}") from None
    articles = [build_article(page, outcomes[i], *encodings[i]) for i, page in enumerate(pages)]
    errors, timeouts = count_outcomes(outcomes)
    stats = ExtractionStats(
        pages=total,
        unreadable_pages=unreadable,
        errors=errors,
        timeouts=timeouts,
        worker_crashes=pool_stats.crashes,
        network_attempts=tuple(pool_stats.network_attempts),
    )
    return ExtractionResult(build_batch(page_set, articles, extractors, settings, stats), stats)


def extract_to_file(
    source: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
    page_set: PageSet | None = None,
) -> ExtractRunResult:
    """Find the pages (unless ``page_set`` is given: :func:`find_pages` of ``source``), extract them
    and write the batch atomically.

    The output location is checked before any page is read; nothing is written
    unless the whole batch was built.

    Raises:
        InvalidPagesError: the input cannot be used.
        OutputPathError: the output location is refused.
        WriteError: writing failed.
    """
    if page_set is None:
        page_set = find_pages(source)
    target = resolve_output_path(source, Path(output_path) if output_path is not None else extracted_path(source))
    result = extract_pages(page_set, settings, extractors, progress)
    written = write_batch(result.doc, target)
    return ExtractRunResult(target, written.sha256, written.size_bytes, result)
