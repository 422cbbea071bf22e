"""The extract step's run: pages in, the batch that the selection stage reads out.

Plain Python (no Prefect): the CLI (``content-selection extract``), the flows
``extract-articles`` and ``extract-and-select`` and the quality benchmark all
call :func:`extract_pages` / :func:`extract_to_file` (or :func:`extract_to_spool`,
which hands the articles to an :class:`~selection_extraction.batch.ArticleSpool`).

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selection_core.batch import ProgressCallback
from selection_core.config import EXTRACTORS
from selection_extraction.batch import (
    ArticleSpool,
    ExtractionResult,
    ExtractionStats,
    build_article,
    build_batch,
    count_outcomes,
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
from selection_extraction.paths import check_batch_paths, extracted_path
from selection_extraction.pool import Outcome, PageJob, WorkerSetupError, default_workers, run_jobs
from selection_extraction.settings import ExtractionSettings


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
    articles: list[dict[str, Any]] = []
    stats = _extract(page_set, settings, extractors, progress, articles.append)
    return ExtractionResult(build_batch(page_set, articles, extractors, settings, stats), stats)


def _extract(
    page_set: PageSet,
    settings: ExtractionSettings,
    extractors: Sequence[Extractor],
    progress: ProgressCallback | None,
    emit: Callable[[dict[str, Any]], None],
) -> ExtractionStats:
    """Extract every page; hand each article to ``emit`` in page order as soon as it and those before it are done.

    Only the pages in flight (and those done ahead of an earlier one still in flight) are held.
    """
    check_extractors(extractors)
    functions = {e.name: e.function for e in extractors}
    pages = page_set.pages
    total = len(pages)
    # Only the pages in flight, or done ahead of an earlier one, are in these two.
    outcomes: dict[int, dict[str, Outcome]] = {}
    encodings: dict[int, tuple[str | None, str | None]] = {}
    waiting: set[int] = set()  # pages done, not yet emitted (membership only: never iterated)
    errors = dict.fromkeys(EXTRACTORS, 0)
    timeouts = dict.fromkeys(EXTRACTORS, 0)
    unreadable = done = emitted = 0

    def page_done(index: int) -> None:
        nonlocal done, emitted
        done += 1
        waiting.add(index)
        if progress is not None:
            progress(done, total)
        while emitted in waiting:
            waiting.remove(emitted)
            page_outcomes = outcomes.pop(emitted)
            page_errors, page_timeouts = count_outcomes([page_outcomes])
            for name in EXTRACTORS:
                errors[name] += page_errors[name]
                timeouts[name] += page_timeouts[name]
            emit(build_article(pages[emitted], page_outcomes, *encodings.pop(emitted, (None, None))))
            emitted += 1

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
                    page_done(index)
                    continue
                decoded = decode_html(data, page.encoding)
                del data
                encodings[index] = (decoded.encoding, decoded.source.value)
                yield PageJob(index, decoded.html, page.url, list(EXTRACTORS))

    def on_outcome(index: int, name: str, outcome: Outcome) -> None:
        page_outcomes = outcomes.setdefault(index, {})
        page_outcomes[name] = outcome
        if len(page_outcomes) == len(EXTRACTORS):
            page_done(index)

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
    assert emitted == total, "every page is an article"
    return ExtractionStats(
        pages=total,
        unreadable_pages=unreadable,
        errors=errors,
        timeouts=timeouts,
        worker_crashes=pool_stats.crashes,
        network_attempts=tuple(pool_stats.network_attempts),
        more_network_attempts=pool_stats.more_network_attempts,
    )


def extract_to_spool(
    page_set: PageSet,
    spool: ArticleSpool,
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
) -> ExtractionResult:
    """Extract every page as :func:`extract_pages` does, handing each article to ``spool`` in page order.

    Only the pages in flight are held, never the articles. ``spool.write(result.doc)``
    then writes the batch, the same bytes as :func:`~selection_extraction.batch.write_batch`
    of :func:`extract_pages`'s document.

    Returns:
        The run's counts, and the batch's root with an empty ``articles`` list
        (the articles are in the spool).
    """
    settings = settings or ExtractionSettings()
    extractors = tuple(extractors) if extractors is not None else default_extractors()
    stats = _extract(page_set, settings, extractors, progress, spool.add)
    return ExtractionResult(build_batch(page_set, [], extractors, settings, stats), stats)


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
    unless the whole batch was built. The articles are not held: each is written,
    as it is done, to an anonymous temporary file beside the output (an
    :class:`~selection_extraction.batch.ArticleSpool`, gone with the process,
    whatever happens), and the batch is then written from it, so memory does not
    grow with the number of pages. The bytes are those of
    :func:`~selection_extraction.batch.write_batch` of :func:`extract_pages`'s document:
    a JSON batch, or JSON Lines and its record beside it when the output's name ends
    in ``.jsonl`` (see :class:`~selection_extraction.batch.ArticleSpool`).

    Returns:
        The output, its SHA-256 and size, and the run (its ``doc`` is the batch's
        root without its ``articles``, which are in the file).

    Raises:
        InvalidPagesError: the input cannot be used.
        OutputPathError: the output location is refused.
        WriteError: writing failed.
    """
    extractors = tuple(extractors) if extractors is not None else default_extractors()
    if page_set is None:
        page_set = find_pages(source)
    target = check_batch_paths(Path(source), Path(output_path) if output_path is not None else extracted_path(source))
    with ArticleSpool(target) as spool:
        result = extract_to_spool(page_set, spool, settings, extractors, progress)
        written = spool.write(result.doc)
    del result.doc["articles"]
    return ExtractRunResult(target, written.sha256, written.size_bytes, result)
