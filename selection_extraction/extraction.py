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
from selection_extraction.pool import Outcome, PageJob, PoolStats, WorkerSetupError, run_jobs
from selection_extraction.processes import available_cores
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
        settings = replace(settings, workers=min(settings.workers or available_cores(), max(page_set.known_pages, 1)))
    readings = PageReadings(page_set, settings.max_page_bytes)
    stats = extract_readings(readings, emit, settings, extractors, progress, readings.expected)
    root = build_batch(readings.counted, [], extractors, settings, stats)
    return ExtractionResult(root, stats)


class _InPageOrder:
    """The pages of a run as they are read, and their extractors' outcomes as they come (in any order): each page
    becomes an article, handed to ``emit`` in page order as soon as those before it are done; the counts."""

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], None],
        progress: ProgressCallback | None,
        expected: Callable[[], int] | None,
    ) -> None:
        self.emit, self.progress, self.expected = emit, progress, expected
        self.pages: dict[int, Page] = {}  # the pages out, by index
        self.outcomes: dict[int, dict[str, Outcome]] = {}
        self.encodings: dict[int, tuple[str | None, str | None]] = {}
        self.errors = dict.fromkeys(EXTRACTORS, 0)
        self.timeouts = dict.fromkeys(EXTRACTORS, 0)
        self.unreadable = self.done = self.emitted = self.met = 0

    def jobs(self, readings: Iterable[Reading], max_page_bytes: int) -> Iterator[PageJob]:
        """A job of each readable page, decoded; an unreadable page is an article of its read error at once."""
        for index, (page, data) in enumerate(readings):
            self.met = index + 1
            self.pages[index] = page
            if data is None:
                data = page_bytes(page, max_page_bytes)
            if isinstance(data, BaseException):
                self.unreadable += 1
                error = read_error(page, data)
                self.outcomes[index] = {name: Outcome("", None, error) for name in EXTRACTORS}
                self._page_done()
                continue
            decoded = decode_html(data, page.encoding)
            del data
            self.encodings[index] = (decoded.encoding, decoded.source.value)
            yield PageJob(index, decoded.html, page.url, list(EXTRACTORS))

    def outcome(self, index: int, name: str, outcome: Outcome) -> None:
        """The outcome of extractor ``name`` on page ``index``."""
        page_outcomes = self.outcomes.setdefault(index, {})
        page_outcomes[name] = outcome
        if len(page_outcomes) == len(EXTRACTORS):
            self._page_done()

    def _page_done(self) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, max(self.expected() if self.expected is not None else self.met, self.done))
        while len(self.outcomes.get(self.emitted, ())) == len(EXTRACTORS):  # the next page to emit is done
            page_outcomes = self.outcomes.pop(self.emitted)
            for name, outcome in page_outcomes.items():
                if outcome.error:
                    self.errors[name] += 1
                    self.timeouts[name] += outcome.error.startswith(TIMEOUT_ERROR_PREFIX)
            encoding = self.encodings.pop(self.emitted, (None, None))
            self.emit(build_article(self.pages.pop(self.emitted), page_outcomes, *encoding))
            self.emitted += 1

    def stats(self, pool: PoolStats) -> ExtractionStats:
        assert not self.pages and not self.outcomes, "every page is an article"
        return ExtractionStats(
            pages=self.emitted,
            unreadable_pages=self.unreadable,
            errors=self.errors,
            timeouts=self.timeouts,
            worker_crashes=pool.crashes,
            network_attempts=tuple(pool.network_attempts),
            more_network_attempts=pool.more_network_attempts,
        )


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
    run = _InPageOrder(emit, progress, expected)
    if progress is not None:
        progress(0, expected() if expected is not None else 0)
    try:
        pool_stats = run_jobs(
            run.jobs(readings, settings.max_page_bytes),
            {e.name: e.function for e in extractors},
            run.outcome,
            workers=settings.workers or available_cores(),
            time_limit=settings.time_limit_seconds,
            recycle_after=settings.recycle_after,
            preload=WORKER_PRELOAD,
            initializer=WORKER_INITIALIZER,
            keep_workers=settings.keep_workers,
        )
    except WorkerSetupError as exc:
        hint = install_command("extract")
        raise ExtractorsUnavailableError(f"{exc}; reinstall the extractor libraries with: {hint}") from None
    return run.stats(pool_stats)


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
