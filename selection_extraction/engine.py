"""The extract step: web pages in, the batch that the selection stage reads out.

Plain Python (no Prefect): the CLI (``content-selection extract``), the flows
``extract-articles`` and ``extract-and-select`` and the quality benchmark all
call :func:`extract_pages` / :func:`extract_to_file`.

**Input** (:func:`find_pages`): a directory of ``.html``, ``.htm``, ``.html.gz``
or ``.htm.gz`` pages (searched recursively, hidden entries skipped, in the
order of their relative paths), a single page file, or a JSON Lines manifest,
one page a line::

    {"id": "a1", "url": "https://news.example/a1", "path": "pages/a1.html.gz"}

``path`` is required (relative paths are taken from the manifest's folder); ``id``
defaults to the file name without its extension; ``url`` may be null; an
optional ``encoding`` gives the charset of the HTTP ``Content-Type`` header.
Other keys are ignored.

**Per page**: the bytes are read (and gunzipped) once in this process and
decoded once (:mod:`selection_extraction.decode`); the same string goes to the three
extractors (:mod:`selection_extraction.adapters`), which run in worker processes across the
machine's cores, each call under a time limit that really stops it
(:mod:`selection_extraction.pool`). Every page is one article, in input order::

    {"id", "url", "path", "encoding", "encoding_source",
     "trafilatura": {"text", "error"},
     "newspaper4k": {"text", "error", "title"},
     "readability": {"cleaned_text", "error", "title"}}

``error`` is null or ``"<ExceptionType>: message"``; a block with an error has
an empty text. A page that cannot be read gets three blocks with that error.

**Output** (:func:`build_batch`): ``{"extractor_versions", "extraction",
"articles"}``; ``extraction`` records the input as given, the settings that can
change the texts and the error counts. No clock, no absolute path that the user
did not give, no machine detail: the same pages give the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.util
import os
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from selection_core.batch import dump_batch
from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_core.errors import EXIT_INTERNAL, InvalidBatchError, SelectionError
from selection_extraction.decode import decode_html
from selection_extraction.pool import (
    ExtractorFunction,
    FunctionRef,
    Outcome,
    PageJob,
    WorkerSetupError,
    default_workers,
    run_jobs,
)
from selection_storage.files import TRANSIENT_ERRNOS, write_atomic
from selection_storage.paths import (
    EXTRACTED_SUFFIX,
    configured_data_root,
    confine,
    resolve_data_root,
    resolve_output_path,
)

#: File name endings of pages, matched case-insensitively; longest first.
PAGE_SUFFIXES: Final[tuple[str, ...]] = (".html.gz", ".htm.gz", ".html", ".htm")

#: Default seconds one extractor may spend on one page before its worker is killed.
DEFAULT_TIME_LIMIT_SECONDS: Final[float] = 60.0

#: Default largest page (after decompression) that is read; larger pages get error blocks.
DEFAULT_MAX_PAGE_BYTES: Final[int] = 64 * 1024 * 1024

#: Pages a worker extracts before it is replaced by a fresh one.
DEFAULT_RECYCLE_AFTER: Final[int] = 500

#: Seconds to wait before each new try of a page read that failed with a transient I/O error.
READ_RETRY_DELAYS: Final[tuple[float, ...]] = (0.2, 1.0)

#: Modules the workers' fork server imports once.
WORKER_PRELOAD: Final[tuple[str, ...]] = ("selection_extraction.adapters",)

#: The top-level modules of the extractor libraries, looked up (not imported) before a run.
EXTRACTOR_LIBRARY_MODULES: Final[tuple[str, ...]] = (
    "trafilatura",
    "newspaper",
    "readability",
    "html_text",
    "tldextract",
)

#: Keyword arguments of ``trafilatura.extract`` (besides the HTML).
TRAFILATURA_OPTIONS: Final[dict[str, Any]] = {"include_comments": False}

#: newspaper4k ``Config`` attributes set for every page.
NEWSPAPER_CONFIG: Final[dict[str, Any]] = {"fetch_images": False, "memorize_articles": False}

#: Keyword arguments of readability's ``Document.summary``.
READABILITY_SUMMARY_OPTIONS: Final[dict[str, Any]] = {"html_partial": True}

#: What to install when the extractor libraries are missing.
INSTALL_HINT: Final[str] = "pip install 'content-selection[extract]'"

#: How pages are decoded, as recorded in every batch.
DECODING_POLICY: Final[str] = (
    "byte-order mark; else the manifest's transport charset or the page's <meta>/XML charset "
    "if the bytes decode under it without error (valid non-ASCII UTF-8 overrides a legacy claim); "
    "else UTF-8; else UTF-8 with U+FFFD replacement"
)


class InvalidPagesError(InvalidBatchError):
    """The pages input cannot be used (missing, empty directory, bad manifest). Never worth retrying."""


class ExtractorsUnavailableError(SelectionError):
    """The extractor libraries are not installed."""

    exit_code = EXIT_INTERNAL


class PageTooLargeError(ValueError):
    """A page is larger than the configured maximum (after decompression)."""


@dataclass(frozen=True)
class Page:
    """One input page.

    Attributes:
        id: The article id (manifest ``id``, else the file name without extension).
        url: The page's URL, or None.
        path: The path as written in the output: relative to the input directory,
            or as written in the manifest.
        file: Where to read it.
        encoding: Transport charset from the manifest, or None.
    """

    id: str
    url: str | None
    path: str
    file: Path
    encoding: str | None = None


@dataclass(frozen=True)
class PageSet:
    """The pages of one input, in batch order."""

    source: str
    kind: str  # "directory" | "manifest" | "page"
    pages: tuple[Page, ...]


@dataclass(frozen=True)
class Extractor:
    """One extractor: where its text goes, the function that computes it, and how it is described.

    Tests swap ``function`` (``dataclasses.replace``) to inject faults; the
    function must be a module-level function so that workers can import it, or a
    :class:`~selection_extraction.pool.FunctionRef` naming one (as the real ones are,
    so that only the workers import the libraries).
    """

    name: str
    function: ExtractorFunction
    distribution: str
    call: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def field(self) -> str:
        return TEXT_FIELDS[self.name]


@dataclass(frozen=True)
class ExtractionSettings:
    """How a run extracts. Only ``time_limit_seconds`` and ``max_page_bytes`` can
    change the output, so only they are recorded in the batch.

    Attributes:
        time_limit_seconds: Seconds one extractor may spend on one page.
        max_page_bytes: Largest page read, after decompression.
        workers: Worker processes; None for one per available core.
        recycle_after: Pages a worker extracts before it is replaced.
        keep_workers: Keep the worker processes after the run for the next run in
            this process (``selection_extraction.pool``): for a task runner's worker
            that extracts one chunk of pages after another.
    """

    time_limit_seconds: float = DEFAULT_TIME_LIMIT_SECONDS
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    workers: int | None = None
    recycle_after: int = DEFAULT_RECYCLE_AFTER
    keep_workers: bool = False

    def __post_init__(self) -> None:
        if not self.time_limit_seconds > 0:
            raise ValueError("time_limit_seconds must be positive")
        if self.max_page_bytes < 1:
            raise ValueError("max_page_bytes must be at least 1")
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.recycle_after < 1:
            raise ValueError("recycle_after must be at least 1")


@dataclass(frozen=True)
class ExtractionStats:
    """Counts over one run. ``errors``/``timeouts`` are per extractor, in ``EXTRACTORS`` order."""

    pages: int
    unreadable_pages: int
    errors: dict[str, int]
    timeouts: dict[str, int]
    worker_crashes: int
    network_attempts: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "unreadable_pages": self.unreadable_pages,
            "errors": dict(self.errors),
            "timeouts": dict(self.timeouts),
            "worker_crashes": self.worker_crashes,
            "network_attempts": list(self.network_attempts),
        }


@dataclass(frozen=True)
class ExtractionResult:
    """A batch document and what happened while it was made."""

    doc: dict[str, Any]
    stats: ExtractionStats


@dataclass(frozen=True)
class ExtractRunResult:
    """What :func:`extract_to_file` wrote."""

    output_path: Path
    sha256: str
    size_bytes: int
    result: ExtractionResult


ProgressCallback = Callable[[int, int], None]


# --------------------------------------------------------------------------- extractors


def default_extractors() -> tuple[Extractor, ...]:
    """The three real extractors, in ``EXTRACTORS`` order.

    The functions are :class:`~selection_extraction.pool.FunctionRef` s to
    :mod:`selection_extraction.adapters`: the libraries are looked up here but imported only
    by the workers' fork server, which imports them anyway. (Importing them in
    the calling process too cost about 0.9 s of CPU per process that extracts,
    a flow's or each task runner worker's, paid before the first page.)

    Raises:
        ExtractorsUnavailableError: a library is not installed.
    """
    missing = [name for name in EXTRACTOR_LIBRARY_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ExtractorsUnavailableError(
            f"the extract step needs trafilatura, newspaper4k, readability-lxml and html-text "
            f"(no module named {', '.join(missing)}); install them with: {INSTALL_HINT}"
        )
    return (
        Extractor(
            "trafilatura",
            FunctionRef("selection_extraction.adapters", "extract_trafilatura"),
            "trafilatura",
            "trafilatura.extract(html, include_comments=False)",
            dict(TRAFILATURA_OPTIONS),
        ),
        Extractor(
            "newspaper4k",
            FunctionRef("selection_extraction.adapters", "extract_newspaper4k"),
            "newspaper4k",
            "newspaper.article(url, input_html=html, config=Config(fetch_images=False, memorize_articles=False))",
            {**NEWSPAPER_CONFIG, "public_suffix_list": f"tldextract {_version('tldextract')} bundled snapshot"},
        ),
        Extractor(
            "readability",
            FunctionRef("selection_extraction.adapters", "extract_readability"),
            "readability-lxml",
            "html_text.extract_text(Document(html).summary(html_partial=True))",
            {**READABILITY_SUMMARY_OPTIONS, "html_text": _version("html-text")},
        ),
    )


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _check_extractors(extractors: Sequence[Extractor]) -> None:
    names = [e.name for e in extractors]
    if sorted(names) != sorted(EXTRACTORS):
        raise ValueError(f"need one extractor for each of {list(EXTRACTORS)}, got {names}")


# --------------------------------------------------------------------------- input


def page_stem(name: str) -> str | None:
    """The name without its page suffix, or None when it is not a page.

    >>> page_stem("a.HTML.gz"), page_stem("b.htm"), page_stem("c.json")
    ('a', 'b', None)
    """
    lower = name.lower()
    for suffix in PAGE_SUFFIXES:
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def find_pages(source: str | os.PathLike[str], label: str | None = None) -> PageSet:
    """The pages of a directory, a manifest or a single page file, in batch order.

    Args:
        source: Where the pages are.
        label: How the input is named in the batch (default: ``source`` as given);
            a caller that resolved a user's path passes the user's spelling here.

    Raises:
        InvalidPagesError: the path is missing, a directory holds no page, or
            the manifest is malformed (with the line and the fix).
    """
    text = os.fspath(source)
    name = text if label is None else label
    path = Path(text)
    if path.is_dir():
        return PageSet(name, "directory", _directory_pages(path))
    if not path.exists():
        raise InvalidPagesError(
            f"{text}: no such file or directory; give a folder of .html/.htm/.html.gz pages or a JSON Lines manifest"
        )
    if page_stem(path.name) is not None:
        return PageSet(name, "page", (Page(page_stem(path.name) or path.name, None, path.name, path),))
    return PageSet(name, "manifest", _manifest_pages(path))


def _directory_pages(root: Path) -> tuple[Page, ...]:
    found: list[tuple[str, Path]] = []
    try:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=_raise):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if not name.startswith(".") and page_stem(name) is not None:
                    file = Path(dirpath) / name
                    found.append((file.relative_to(root).as_posix(), file))
    except OSError as exc:
        raise InvalidPagesError(
            f"{root}: cannot list the directory ({exc.strerror or exc}); check its permissions"
        ) from None
    if not found:
        raise InvalidPagesError(f"{root}: no .html, .htm, .html.gz or .htm.gz page in this directory; check the path")
    found.sort(key=lambda item: item[0])
    return tuple(Page(_id_of(rel), None, rel, file) for rel, file in found)


def _raise(exc: OSError) -> None:
    raise exc


def _id_of(relative: str) -> str:
    head, _, name = relative.rpartition("/")
    stem = page_stem(name) or name
    return f"{head}/{stem}" if head else stem


def _manifest_pages(manifest: Path) -> tuple[Page, ...]:
    try:
        data = manifest.read_bytes()
    except OSError as exc:
        raise InvalidPagesError(f"{manifest}: cannot be read ({exc.strerror or exc}); check the path") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidPagesError(f"{manifest}: line {line} is not UTF-8; save the manifest as UTF-8") from None
    base = manifest.parent
    pages: list[Page] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{manifest}: line {number}"
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise InvalidPagesError(f"{where} is not JSON ({exc.msg}); write one JSON object per line") from None
        if not isinstance(entry, dict):
            raise InvalidPagesError(f'{where} is not a JSON object; write {{"id": ..., "url": ..., "path": ...}}')
        page_path = entry.get("path")
        if not isinstance(page_path, str) or not page_path.strip():
            raise InvalidPagesError(f'{where} has no "path" string; give the page file\'s path')
        for key in ("id", "url", "encoding"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise InvalidPagesError(f'{where}: "{key}" must be a string or null')
        file = Path(page_path)
        if not file.is_absolute():
            file = base / file
        page_id = entry.get("id")
        if page_id is None:
            page_id = page_stem(file.name) or file.name
        pages.append(Page(page_id, entry.get("url"), page_path, file, entry.get("encoding")))
    return tuple(pages)


def read_page(page: Page, max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> bytes:
    """The page's bytes, gunzipped when its name ends in ``.gz``.

    Raises:
        OSError: the file cannot be read, or is not valid gzip.
        EOFError: a truncated gzip file.
        PageTooLargeError: more than ``max_bytes`` (after decompression).
    """
    with open(page.file, "rb") as raw:
        if page.file.name.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=raw) as unzipped:
                data = unzipped.read(max_bytes + 1)
        else:
            data = raw.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PageTooLargeError(f"larger than {max_bytes} bytes; raise max_page_bytes to extract it")
    return data


def read_page_with_retries(page: Page, max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> bytes:
    """:func:`read_page`, tried again after a transient I/O error (``EIO``, ``EAGAIN``...).

    Waits :data:`READ_RETRY_DELAYS` between tries; any other error, or the last
    transient one, is raised.
    """
    for delay in (*READ_RETRY_DELAYS, None):
        try:
            return read_page(page, max_bytes)
        except OSError as exc:
            if delay is None or exc.errno not in TRANSIENT_ERRNOS:
                raise
        time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _read_error(page: Page, exc: BaseException) -> str:
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(str(exc).split())
    return f"{type(exc).__name__}: cannot read page {page.path}: {detail or '(no message)'}"


# --------------------------------------------------------------------------- output


def build_article(
    page: Page,
    outcomes: dict[str, Outcome],
    encoding: str | None,
    encoding_source: str | None,
) -> dict[str, Any]:
    """One article of the batch, with the blocks in ``EXTRACTORS`` order."""
    article: dict[str, Any] = {
        "id": page.id,
        "url": page.url,
        "path": page.path,
        "encoding": encoding,
        "encoding_source": encoding_source,
    }
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
        "extractor_versions": {name: _version(by_name[name].distribution) for name in EXTRACTORS},
        "extraction": {
            "input": page_set.source,
            "input_kind": page_set.kind,
            "pages": stats.pages,
            "unreadable_pages": stats.unreadable_pages,
            "errors": dict(stats.errors),
            "timeouts": dict(stats.timeouts),
            "time_limit_seconds": settings.time_limit_seconds,
            "max_page_bytes": settings.max_page_bytes,
            "decoding": DECODING_POLICY,
            "extractors": {
                name: {
                    "distribution": by_name[name].distribution,
                    "version": _version(by_name[name].distribution),
                    "call": by_name[name].call,
                    "settings": dict(by_name[name].settings),
                    "text_field": TEXT_FIELDS[name],
                }
                for name in EXTRACTORS
            },
            "lxml": _version("lxml"),
        },
        "articles": articles,
    }


def extracted_path(source: str | os.PathLike[str]) -> Path:
    """``<name>_extracted.json`` beside the input (a directory, a manifest or a page).

    >>> extracted_path("data/pages").as_posix()
    'data/pages_extracted.json'
    >>> extracted_path("data/pages.jsonl").as_posix()
    'data/pages_extracted.json'
    """
    path = Path(source)
    if not path.name or path.name in (".", ".."):
        path = path.resolve()
    if path.is_dir() or not path.suffix:
        stem = path.name
    else:
        stem = page_stem(path.name) or path.stem
    return path.with_name(f"{stem}{EXTRACTED_SUFFIX}")


@dataclass(frozen=True)
class ExtractPaths:
    """The resolved, checked paths of an extraction run."""

    pages: Path
    output: Path
    data_root: Path | None


def resolve_extract_paths(pages: str, output_path: str | None = None, data_root: str | None = None) -> ExtractPaths:
    """Resolve the pages input and the batch output; confine both to the data root when one is set.

    Args:
        pages: A directory of pages or a JSON Lines manifest.
        output_path: Where to write the batch; None for ``<pages>_extracted.json`` beside the input.
        data_root: Directory every path must resolve inside; None for
            ``$CONTENT_SELECTION_DATA_ROOT`` (no confinement when that is unset too).

    Raises:
        UnsafePathError: a path leaves the data root.
        OutputPathError: the output is refused by the core (a directory, the input, not writable).
    """
    root_text = configured_data_root(data_root)
    if root_text is None:
        source = Path(pages).expanduser().absolute()
        wanted = Path(output_path).expanduser().absolute() if output_path else extracted_path(source)
        return ExtractPaths(source, resolve_output_path(source, wanted), None)
    root = resolve_data_root(root_text)
    source = confine(pages, root, "pages")
    wanted = confine(output_path, root, "output") if output_path else confine(extracted_path(source), root, "output")
    return ExtractPaths(source, resolve_output_path(source, wanted), root)


# --------------------------------------------------------------------------- running


def extract_pages(
    page_set: PageSet,
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
) -> ExtractionResult:
    """Extract every page with the three extractors; return the batch document.

    Args:
        page_set: From :func:`find_pages`.
        settings: Time limit, page size limit, workers.
        extractors: The three extractors (default: the real ones).
        progress: Called with ``(pages done, total)`` as pages complete.

    Returns:
        The batch and the run's counts (timeouts, crashes, network attempts).
    """
    settings = settings or ExtractionSettings()
    extractors = tuple(extractors) if extractors is not None else default_extractors()
    _check_extractors(extractors)
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
        for index, page in enumerate(pages):
            try:
                data = read_page_with_retries(page, settings.max_page_bytes)
            except (OSError, EOFError, PageTooLargeError, zlib.error) as exc:
                unreadable += 1
                error = _read_error(page, exc)
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
    errors = dict.fromkeys(EXTRACTORS, 0)
    timeouts = dict.fromkeys(EXTRACTORS, 0)
    for page_outcomes in outcomes:
        for name, outcome in page_outcomes.items():
            if outcome.error:
                errors[name] += 1
                if outcome.error.startswith("TimeoutError:"):
                    timeouts[name] += 1
    stats = ExtractionStats(
        pages=total,
        unreadable_pages=unreadable,
        errors=errors,
        timeouts=timeouts,
        worker_crashes=pool_stats.crashes,
        network_attempts=tuple(pool_stats.network_attempts),
    )
    return ExtractionResult(build_batch(page_set, articles, extractors, settings, stats), stats)


#: What every worker runs once before its first page: offline ``tldextract``
#: (:func:`selection_extraction.adapters.prepare_worker`).
WORKER_INITIALIZER: Final[FunctionRef] = FunctionRef("selection_extraction.adapters", "prepare_worker")


def extract_to_file(
    source: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    settings: ExtractionSettings | None = None,
    extractors: Sequence[Extractor] | None = None,
    progress: ProgressCallback | None = None,
) -> ExtractRunResult:
    """Find the pages, extract them and write the batch atomically.

    The output location is checked before any page is read; nothing is written
    unless the whole batch was built.

    Raises:
        InvalidPagesError: the input cannot be used.
        OutputPathError: the output location is refused.
        WriteError: writing failed.
    """
    page_set = find_pages(source)
    target = resolve_output_path(source, Path(output_path) if output_path is not None else extracted_path(source))
    result = extract_pages(page_set, settings, extractors, progress)
    data = dump_batch(result.doc)
    write_atomic(target, data)
    return ExtractRunResult(target, hashlib.sha256(data).hexdigest(), len(data), result)
