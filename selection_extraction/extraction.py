"""The extract step's run, free of Prefect: pages in, extracted in killable worker processes, the batch out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from selection_core.batch import ProgressCallback
from selection_core.config import EXTRACTORS
from selection_core.errors import install_command
from selection_extraction.decode import decode_html
from selection_extraction.extracted import (
    ArticleSpool,
    ExtractionResult,
    ExtractionStats,
    build_article,
    build_batch,
)
from selection_extraction.extractors import (
    WORKER_INITIALIZER,
    WORKER_PRELOAD,
    Extractor,
    ExtractorsUnavailableError,
    check_extractors,
    default_extractors,
)
from selection_extraction.pages import Page, PageReadings, PageSet, Reading, find_pages, page_bytes, read_error
from selection_extraction.paths import check_batch_paths, extracted_path
from selection_extraction.pool import Outcome, PageJob, WorkerSetupError, default_workers, run_jobs
from selection_extraction.settings import ExtractionSettings
from selection_storage.stores import Location, location

#: How the error of a call stopped at the time limit begins.
TIMEOUT_ERROR_PREFIX: Final[str] = "TimeoutError:"


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
    """Extract every page with the three extractors (default: the real ones); ``progress(done, total)`` in pages."""
    articles: list[dict[str, Any]] = []
    result = extract_each(page_set, articles.append, settings, extractors, progress)
    result.doc["articles"] = articles
    return result


def extract_each(
    page_set: PageSet,
    emit: Callable[[dict[str, Any]], None],
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
) -> ExtractionResult:
    """:func:`extract_pages` handing each article to ``emit`` (an :class:`ArticleSpool`'s ``add``) in page order as
    soon as those before it are done; the root has an empty ``articles``."""
    settings = settings or ExtractionSettings()
    extractors = tuple(extractors) if extractors is not None else default_extractors()
    if page_set.known_pages is not None:  # no more worker processes than pages
        settings = replace(settings, workers=min(settings.workers or default_workers(), max(page_set.known_pages, 1)))
    readings = PageReadings(page_set, settings.max_page_bytes)
    stats = extract_readings(readings, emit, settings, extractors, progress, readings.expected)
    root = build_batch(readings.counted, [], extractors, settings, stats)
    return ExtractionResult(root, stats)


def extract_readings(
    readings: Iterable[Reading],
    emit: Callable[[dict[str, Any]], None],
    settings: ExtractionSettings,
    extractors: Sequence[Extractor],
    progress: ProgressCallback | None = None,
    expected: Callable[[], int] | None = None,
) -> ExtractionStats:
    """Extract the pages of ``readings`` (taken lazily: a few ahead of the extractors; a page file's bytes None:
    read here), handing each article to ``emit`` in their order as soon as those before it are done; the run's
    counts. ``progress(done, total)`` in pages, ``total`` by ``expected()`` (None: the pages met so far)."""
    check_extractors(extractors)
    functions = {e.name: e.function for e in extractors}
    pages: dict[int, Page] = {}  # the pages out, by index
    outcomes: dict[int, dict[str, Outcome]] = {}
    encodings: dict[int, tuple[str | None, str | None]] = {}
    errors = dict.fromkeys(EXTRACTORS, 0)
    timeouts = dict.fromkeys(EXTRACTORS, 0)
    unreadable = done = emitted = met = 0

    def page_done() -> None:
        nonlocal done, emitted
        done += 1
        if progress is not None:
            progress(done, max(expected() if expected is not None else met, done))
        while len(outcomes.get(emitted, ())) == len(EXTRACTORS):  # the next page to emit is done
            page_outcomes = outcomes.pop(emitted)
            for name, outcome in page_outcomes.items():
                if outcome.error:
                    errors[name] += 1
                    timeouts[name] += outcome.error.startswith(TIMEOUT_ERROR_PREFIX)
            emit(build_article(pages.pop(emitted), page_outcomes, *encodings.pop(emitted, (None, None))))
            emitted += 1

    def jobs() -> Iterator[PageJob]:
        nonlocal unreadable, met
        for index, (page, data) in enumerate(readings):
            met = index + 1
            pages[index] = page
            if data is None:
                data = page_bytes(page, settings.max_page_bytes)
            if isinstance(data, BaseException):
                unreadable += 1
                error = read_error(page, data)
                outcomes[index] = {name: Outcome("", None, error) for name in EXTRACTORS}
                page_done()
                continue
            decoded = decode_html(data, page.encoding)
            del data
            encodings[index] = (decoded.encoding, decoded.source.value)
            yield PageJob(index, decoded.html, page.url, list(EXTRACTORS))

    def on_outcome(index: int, name: str, outcome: Outcome) -> None:
        page_outcomes = outcomes.setdefault(index, {})
        page_outcomes[name] = outcome
        if len(page_outcomes) == len(EXTRACTORS):
            page_done()

    if progress is not None:
        progress(0, expected() if expected is not None else 0)
    workers = settings.workers or default_workers()
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
        hint = install_command("extract")
        raise ExtractorsUnavailableError(f"{exc}; reinstall the extractor libraries with: {hint}") from None
    assert not pages and not outcomes, "every page is an article"
    return ExtractionStats(
        pages=emitted,
        unreadable_pages=unreadable,
        errors=errors,
        timeouts=timeouts,
        worker_crashes=pool_stats.crashes,
        network_attempts=tuple(pool_stats.network_attempts),
        more_network_attempts=pool_stats.more_network_attempts,
    )


def extract_to_file(
    source: str | os.PathLike[str] | Location,
    output_path: str | os.PathLike[str] | Location | None = None,
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
    page_set: PageSet | None = None,
) -> ExtractRunResult:
    """Find the pages (unless ``page_set`` is given), extract them and write the batch atomically, its output
    checked before any page is read; the run's ``doc`` is returned without ``articles``.

    Raises:
        InvalidPagesError: the input cannot be used.
        OutputPathError: the output location is refused.
        WriteError: writing failed.
    """
    extractors = tuple(extractors) if extractors is not None else default_extractors()
    if page_set is None:
        page_set = find_pages(location(source))
    where = location(source)
    target = check_batch_paths(
        where, location(output_path, None, "output") if output_path is not None else extracted_path(where)
    )
    with ArticleSpool(target) as spool:
        result = extract_each(page_set, spool.add, settings, extractors, progress)
        written = spool.write(result.doc)
    del result.doc["articles"]
    return ExtractRunResult(target, written.sha256, written.size_bytes, result)
