"""The extracted batch: its articles, its record of how it was made, its counts, and writing it."""

from __future__ import annotations

import hashlib
import itertools
import logging
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, NamedTuple

from selection_core.batch import dump_batch
from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_core.evidence import counts_text
from selection_core.formats import format_of
from selection_extraction.extractors import Extractor, library_version
from selection_extraction.pages import Page, PageSet
from selection_extraction.paths import record_path
from selection_extraction.pool import MAX_NETWORK_ATTEMPTS_KEPT, Outcome
from selection_extraction.settings import ExtractionSettings
from selection_storage.atomic import write_error
from selection_storage.stores import Location, location, store, write_atomic_group

#: How pages are decoded, as recorded in every batch.
DECODING_POLICY: Final[str] = (
    "byte-order mark; else the manifest's transport charset or the page's <meta>/XML charset "
    "if the bytes decode under it without error (valid non-ASCII UTF-8 overrides a legacy claim); "
    "else UTF-8; else UTF-8 with U+FFFD replacement"
)


@dataclass(frozen=True)
class ExtractionStats:
    """Counts over one run (per extractor for ``errors``/``timeouts``); the first ``MAX_NETWORK_ATTEMPTS_KEPT``
    network attempts blocked, word for word, and how many more there were."""

    pages: int
    unreadable_pages: int
    errors: dict[str, int]
    timeouts: dict[str, int]
    worker_crashes: int
    network_attempts: tuple[str, ...]
    more_network_attempts: int = 0

    @property
    def blocked_network_attempts(self) -> int:
        """Every network attempt blocked, recorded or only counted."""
        return len(self.network_attempts) + self.more_network_attempts

    def __add__(self, other: ExtractionStats) -> ExtractionStats:
        """The counts of two chunks as one run's, with the first network attempts kept."""
        attempts = self.network_attempts + other.network_attempts
        return ExtractionStats(
            pages=self.pages + other.pages,
            unreadable_pages=self.unreadable_pages + other.unreadable_pages,
            errors=_add_counts(self.errors, other.errors),
            timeouts=_add_counts(self.timeouts, other.timeouts),
            worker_crashes=self.worker_crashes + other.worker_crashes,
            network_attempts=attempts[:MAX_NETWORK_ATTEMPTS_KEPT],
            more_network_attempts=self.more_network_attempts
            + other.more_network_attempts
            + max(0, len(attempts) - MAX_NETWORK_ATTEMPTS_KEPT),
        )


def _add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    total = dict(a)
    for name, count in b.items():
        total[name] = total.get(name, 0) + count
    return total


#: The counts of a run of no page.
NO_STATS: Final[ExtractionStats] = ExtractionStats(
    0, 0, dict.fromkeys(EXTRACTORS, 0), dict.fromkeys(EXTRACTORS, 0), 0, ()
)


@dataclass(frozen=True)
class ExtractionResult:
    """A batch document and what happened while it was made."""

    doc: dict[str, Any]
    stats: ExtractionStats


class BatchBytes(NamedTuple):
    """The fingerprint of the bytes of a written batch."""

    sha256: str
    size_bytes: int


def build_article(
    page: Page,
    outcomes: Mapping[str, Outcome],
    encoding: str | None,
    encoding_source: str | None,
) -> dict[str, Any]:
    """One article of the batch, with the blocks in ``EXTRACTORS`` order."""
    article: dict[str, Any] = {"id": page.id, "url": page.url, "path": page.path}
    if page.warc is not None:  # where to find the record again
        article["warc_date"] = page.warc.date
        article["warc_offset"] = page.warc.offset
        if page.warc.dump is not None:  # the crawl its warcinfo names (Common Crawl's CC-MAIN-...)
            article["warc_dump"] = page.warc.dump
    article["encoding"] = encoding
    article["encoding_source"] = encoding_source
    for name in EXTRACTORS:
        outcome = outcomes[name]
        block: dict[str, Any] = {TEXT_FIELDS[name]: "" if outcome.error else outcome.text, "error": outcome.error}
        if name != "trafilatura":
            block["title"] = None if outcome.error else outcome.title
        article[name] = block
    return article


def build_batch(
    page_set: PageSet,
    articles: list[dict[str, Any]],
    extractors: Sequence[Extractor],
    settings: ExtractionSettings,
    stats: ExtractionStats,
) -> dict[str, Any]:
    """The batch document: versions, how it was made, then the articles."""
    by_name = {e.name: e for e in extractors}
    return {
        "extractor_versions": {name: library_version(by_name[name].distribution) for name in EXTRACTORS},
        "extraction": {
            "input": page_set.source,
            "input_kind": page_set.kind,
            "pages": stats.pages,
            "unreadable_pages": stats.unreadable_pages,
            **({"warc_records": dict(page_set.warc_records)} if page_set.warc_records is not None else {}),
            "errors": dict(stats.errors),
            "timeouts": dict(stats.timeouts),
            "time_limit_seconds": settings.time_limit_seconds,
            "max_page_bytes": settings.max_page_bytes,
            "decoding": DECODING_POLICY,
            "extractors": {
                name: {
                    "distribution": by_name[name].distribution,
                    "version": library_version(by_name[name].distribution),
                    "call": by_name[name].call,
                    "settings": dict(by_name[name].settings),
                    "text_field": TEXT_FIELDS[name],
                }
                for name in EXTRACTORS
            },
            "lxml": library_version("lxml"),
        },
        "articles": articles,
    }


def dump_record(root: dict[str, Any]) -> bytes:
    """The extraction record of a JSON Lines batch: its document without the articles, written as a JSON batch is."""
    return dump_batch({key: value for key, value in root.items() if key != "articles"})


#: Bytes copied at a time from the spooled articles into the batch.
_COPY_BYTES: Final[int] = 1 << 20


class ArticleSpool:
    """The articles of one batch, in order, in an anonymous temporary file beside ``target`` (a file; for an object,
    in the temporary folder); then the batch written
    from them (``watch`` is called with ``(index, article)`` for each article added). A plain class, so that Prefect
    does not walk into it; WriteError when the temporary file cannot be created or written."""

    def __init__(self, target: Location, watch: Callable[[int, dict[str, Any]], None] | None = None) -> None:
        self.target = location(target)
        self.count = 0
        self._format = format_of(self.target.name)
        self._watch = watch
        try:  # beside the target; for an object, in this machine's temporary folder
            self._file = tempfile.TemporaryFile(dir=store(self.target).spool_folder())
        except OSError as exc:
            raise write_error(self.target, exc) from None

    def __repr__(self) -> str:
        return f"ArticleSpool({str(self.target)!r}, count={self.count})"

    def __enter__(self) -> ArticleSpool:
        return self

    def __exit__(self, *_exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def add(self, article: dict[str, Any]) -> None:
        if self._watch is not None:
            self._watch(self.count, article)
        piece = (self._format.separator if self.count else b"") + self._format.render([article])
        try:
            self._file.write(piece)
        except OSError as exc:
            raise write_error(self.target, exc) from None
        self.count += 1

    def write(self, root: dict[str, Any]) -> BatchBytes:
        """Write the batch atomically: ``root`` (with an empty ``articles`` list) around the articles added, or for
        JSON Lines the lines and ``root`` as the record beside them; may be called again. Raises OutputPathError
        or WriteError."""
        head, tail = self._format.envelope_parts(root, self.count > 0)
        digest = hashlib.sha256()
        size = 0

        def pieces() -> Iterator[bytes]:
            nonlocal size
            self._file.seek(0)
            for piece in itertools.chain([head], iter(lambda: self._file.read(_COPY_BYTES), b""), [tail]):
                digest.update(piece)
                size += len(piece)
                yield piece

        record = record_path(self.target)  # written first: when the batch appears, its record is there
        extra = [] if record is None else [(record, dump_record(root))]
        write_atomic_group([*extra, (self.target, pieces())])
        return BatchBytes(digest.hexdigest(), size)

    def close(self) -> None:
        """Remove the temporary file (never raises)."""
        try:
            self._file.close()
        except OSError:
            pass


def log_extraction(logger: logging.Logger | logging.LoggerAdapter[Any], stats: ExtractionStats) -> None:
    """Log a run's counts, and a warning when an extractor tried to use the network."""
    logger.info(
        "Extracted %d pages (%d unreadable); errors: %s; timeouts: %s",
        stats.pages,
        stats.unreadable_pages,
        counts_text(stats.errors),
        counts_text(stats.timeouts),
    )
    if stats.network_attempts:
        logger.warning(
            "Blocked %d network attempts of the extractors: %s",
            stats.blocked_network_attempts,
            "; ".join(stats.network_attempts[:5]),
        )
