"""The pages of an input: finding them in a folder, a manifest or web archives (on a disk, or in an object store:
a prefix is a folder), and reading their bytes, each web archive once, as a stream."""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Final

import orjson

from selection_core.errors import InvalidBatchError, SelectionError, UnsafePathError
from selection_extraction.settings import DEFAULT_MAX_PAGE_BYTES, PageTooLargeError
from selection_extraction.warc import (
    RECORD_KINDS,
    NotAWarcError,
    WarcRecordRef,
    WarcStream,
    arc_refusal,
    archive_kind,
    check_is_warc,
    is_warc_name,
    strip_suffix,
)
from selection_storage.stores import (
    Location,
    ObjectPath,
    is_url,
    local_text,
    location,
    store,
)
from selection_storage.stores.retries import retried

#: File name endings of pages, matched case-insensitively; longest first.
PAGE_SUFFIXES: Final[tuple[str, ...]] = (".html.gz", ".htm.gz", ".html", ".htm")

#: Seconds a page file's read is tried again after a transient failure (with the waits of
#: :func:`~selection_storage.stores.retries.retried`: two or three tries).
READ_PATIENCE_SECONDS: Final[float] = 8.0


class InvalidPagesError(InvalidBatchError):
    """The pages input cannot be used (missing, empty directory, bad manifest)."""


#: What reading a page may raise for that page alone (it becomes an article with three error blocks).
UNREADABLE_PAGE_ERRORS: Final[tuple[type[BaseException], ...]] = (OSError, EOFError, PageTooLargeError, zlib.error)


@dataclass(frozen=True)
class Page:
    """One input page: ``path`` as the batch writes it, ``file`` where to read it (for a WARC page with ``warc``),
    ``encoding`` its transport charset."""

    id: str
    url: str | None
    path: str
    file: Location
    encoding: str | None = None
    warc: WarcRecordRef | None = None

    @property
    def weight(self) -> int:
        """About how many bytes the page holds."""
        return max(1, self.warc.length if self.warc is not None else _size(self.file))


@dataclass(frozen=True)
class WarcFile:
    """A web archive of an input: its pages are met as it is read (:class:`PageReadings`)."""

    shown: str
    file: Location


@dataclass(frozen=True)
class PageSet:
    """The pages and web archives of one input, in batch order (a web archive's pages in its place)."""

    source: str
    kind: str  # "directory" | "manifest" | "page" | "warc"
    entries: tuple[Page | WarcFile, ...]
    #: The records of the input's WARC files by kind once they are read, or None without a WARC file.
    warc_records: dict[str, int] | None = None

    @property
    def known_pages(self) -> int | None:
        """How many pages the input has, or None while a web archive is not read (its pages are not counted)."""
        if any(isinstance(entry, WarcFile) for entry in self.entries):
            return None
        return len(self.entries)

    def contents(self) -> str:
        """What the input holds, as a line says it: ``6 pages``, ``1 web archive``, ``2 pages and 3 web archives``."""
        archives = sum(isinstance(entry, WarcFile) for entry in self.entries)
        counts = ((len(self.entries) - archives, "page"), (archives, "web archive"))
        return " and ".join(f"{n} {word}{'' if n == 1 else 's'}" for n, word in counts if n)


def page_stem(name: str) -> str | None:
    """The name without its page suffix, or None when it is not a page."""
    return strip_suffix(name, PAGE_SUFFIXES)


def find_pages(source: str | os.PathLike[str] | ObjectPath, label: str | None = None) -> PageSet:
    """The pages and web archives of a directory (or a prefix in a store), a manifest, a single page or a WARC file
    (each a file, or an object in a store), in batch order, each web archive's first bytes checked (its pages are
    met as it is read: :class:`PageReadings`); ``label`` names the input in the batch (default: ``source``).
    InvalidPagesError when the input cannot be used."""
    name = str(source) if label is None else label
    kind, entries = _listing(source, name)
    for entry in entries:
        if isinstance(entry, WarcFile):
            with warc_refusals(entry.shown):
                check_is_warc(entry.file, entry.shown)
    return PageSet(name, kind, entries)


def missing_pages(text: str, folder_noun: str = "directory") -> InvalidPagesError:
    """The refusal of pages ``text`` that do not exist (on a disk, in a store, whose folders are prefixes, or on a web
    server, which has no folders)."""
    if folder_noun == "web server":
        return InvalidPagesError(f"{text}: the server answered 404 (no such file); check the URL")
    if folder_noun == "prefix":  # nothing there: a mistyped URL, more likely than a prefix
        return InvalidPagesError(f"{text}: no such object, and no object under this prefix; check the URL")
    return InvalidPagesError(
        f"{text}: no such file or directory; give a folder of .html/.htm/.html.gz pages, "
        "a .warc/.warc.gz file or a JSON Lines manifest"
    )


def _listing(source: str | os.PathLike[str] | ObjectPath, name: str) -> tuple[str, tuple[Page | WarcFile, ...]]:
    """The input's kind and entries: a folder (or a prefix in a store), else a web archive (by its name, else by its
    first bytes), a page (by its name), or a JSON Lines manifest."""
    path: Location
    if isinstance(source, ObjectPath) or is_url(source):
        path = location(source)
        text = str(path)
    else:
        text = os.fspath(source)
        path = Path(text)
    if _is_folder(path, text):
        return "directory", _directory_pages(path)
    if is_warc_name(path.name):
        return "warc", (WarcFile(name, path),)
    if page_stem(path.name) is not None:
        return "page", (Page(page_stem(path.name) or path.name, None, path.name, path),)
    with warc_refusals(name):  # a web archive named loosely is known by its first bytes
        kind = archive_kind(path)
        if kind == "arc":
            raise arc_refusal(name)
    if kind == "warc":
        return "warc", (WarcFile(name, path),)
    return "manifest", _manifest_pages(path)


def _is_folder(path: Location, text: str) -> bool:
    """Whether the input is a folder (a prefix in a store); :func:`missing_pages` when nothing is there."""
    where = store(path)
    kind = where.kind()
    if kind is None:
        raise missing_pages(text, where.folder_noun)
    return kind == "folder"


@contextlib.contextmanager
def warc_refusals(shown: str) -> Iterator[None]:
    """A web archive that is not one, or cannot be read, refused as pages that cannot be used."""
    try:
        yield
    except NotAWarcError as exc:
        raise InvalidPagesError(str(exc)) from None
    except SelectionError:  # an object's store failed: said as it is (a retry may cure it)
        raise
    except OSError as exc:
        raise InvalidPagesError(
            f"{shown}: cannot be read ({exc.strerror or exc}); check the path and its permissions"
        ) from None


def no_pages_error(name: str, counts: dict[str, int]) -> InvalidPagesError:
    """The refusal of web archives without a page, with the counts of their records by kind."""
    return InvalidPagesError(
        f"{name}: no HTML response (HTTP 200, text/html) in its WARC records "
        f"({', '.join(f'{k} {v}' for k, v in counts.items() if v) or 'no record'}); check the input"
    )


def _size(path: Location) -> int:
    """The file's (object's) size, or 0 when it cannot be read (the extraction reports that)."""
    try:
        return store(path).size()
    except (OSError, SelectionError):
        return 0


def _is_warc(file: Location) -> bool:
    """Whether a file not named as a page or a web archive is a WARC all the same, by its first record (a file or
    an object that cannot be found is not: its page is unreadable). A store that fails says so (the run fails)."""
    try:
        return archive_kind(file) == "warc"
    except InvalidBatchError:
        if store(file).kind() is None:
            return False
        raise
    except SelectionError:
        raise
    except OSError:
        return False


def _directory_pages(root: Location) -> tuple[Page | WarcFile, ...]:
    """The pages and web archives of a folder or a prefix, by relative path: pages and WARC files by their names,
    other files that start with a WARC record too."""
    folder = store(root)
    found: list[tuple[str, Location, bool]] = []  # (relative path, file, is a WARC), by relative path
    try:
        for entry in folder.files():
            name = entry.relative.rpartition("/")[2]
            page = page_stem(name) is not None
            if page or is_warc_name(name) or _is_warc(entry.where):
                found.append((entry.relative, entry.where, not page))
    except SelectionError:  # the store failed: said as it is
        raise
    except OSError as exc:
        raise InvalidPagesError(
            f"{root}: cannot list the directory ({exc.strerror or exc}); check its permissions"
        ) from None
    if not found:
        where = (
            "under this prefix; check the URL"
            if folder.folder_noun == "prefix"
            else "in this directory; check the path"
        )
        raise InvalidPagesError(f"{root}: no .html, .htm, .html.gz, .htm.gz page or .warc, .warc.gz file {where}")
    return tuple(WarcFile(rel, file) if warc else Page(_id_of(rel), None, rel, file) for rel, file, warc in found)


def _id_of(relative: str) -> str:
    head, _, name = relative.rpartition("/")
    stem = page_stem(name) or name
    return f"{head}/{stem}" if head else stem


def _manifest_pages(manifest: Location) -> tuple[Page | WarcFile, ...]:
    """The pages of a JSON Lines manifest (a file, or an object): one ``{"id", "url", "path", "encoding"}`` a line,
    each ``path`` relative to the manifest's folder (prefix), or absolute: a path on this disk for a manifest on it,
    an object's URL for a manifest in a store."""
    try:
        with store(manifest).open() as raw:
            data = raw.read()
    except SelectionError:
        raise
    except OSError as exc:
        raise InvalidPagesError(f"{manifest}: cannot be read ({exc.strerror or exc}); check the path") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad_line = data[: exc.start].count(b"\n") + 1
        raise InvalidPagesError(f"{manifest}: line {bad_line} is not UTF-8; save the manifest as UTF-8") from None
    pages: list[Page | WarcFile] = []
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
        file = _entry_file(manifest.parent, page_path, where)
        if is_warc_name(file.name) or (page_stem(file.name) is None and _is_warc(file)):
            pages.append(WarcFile(page_path, file))
            continue
        page_id = entry.get("id")
        if page_id is None:
            page_id = page_stem(file.name) or file.name
        pages.append(Page(page_id, entry.get("url"), page_path, file, entry.get("encoding")))
    return tuple(pages)


def _entry_file(base: Location, page_path: str, where: str) -> Location:
    """Where a manifest's ``path`` points, the manifest's folder (prefix) being ``base``."""
    if isinstance(base, Path):
        file = Path(page_path)
        return file if file.is_absolute() else base / file
    if is_url(page_path):
        try:
            return ObjectPath.parse(page_path, base.options, "page")
        except UnsafePathError as exc:
            raise InvalidPagesError(f'{where}: "path" {exc}') from None
    if os.path.isabs(local_text(page_path)):
        raise InvalidPagesError(
            f'{where}: "path" {page_path!r} is on a disk, which a manifest in a store cannot name; '
            "give a path relative to the manifest, or an object's URL"
        )
    try:
        return base.joinpath(page_path, "page")
    except UnsafePathError:
        raise InvalidPagesError(
            f"{where}: \"path\" {page_path!r} has '.' or '..' segments; "
            "give a path under the manifest's prefix, or an object's URL"
        ) from None


@contextlib.contextmanager
def _opened(file: Location) -> Iterator[BinaryIO]:
    """The file or object opened for reading (:meth:`Store.open`), a missing object raised as a missing file is
    (FileNotFoundError: its page alone is unreadable); any other failure of a store a typed SelectionError."""
    try:
        raw = store(file).open()
    except InvalidBatchError:  # a store's missing object is a missing file, as on a disk
        if store(file).kind() is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(file)) from None
        raise
    with raw:
        yield raw


def read_page(page: Page, max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> bytes:
    """The page's bytes (a file's, or an object's through its store), gunzipped when its name ends in ``.gz``;
    PageTooLargeError over ``max_bytes``, FileNotFoundError for a missing object as for a missing file, a typed
    SelectionError when a store fails."""
    with _opened(page.file) as raw:
        if page.file.name.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=raw) as unzipped:
                data = unzipped.read(max_bytes + 1)
        else:
            data = raw.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PageTooLargeError.over(max_bytes)
    return data


#: A page and its bytes, or why they cannot be read (its article has three error blocks), or None: not read yet.
Reading = tuple[Page, "bytes | BaseException | None"]


class PageReadings:
    """The pages of a page set with their bytes, in batch order: each page file read (tried again after a transient
    I/O error) unless ``read_files`` is False (its bytes None: :func:`page_bytes` where it is extracted),
    each web archive read once, as a stream. Iterate once; then :attr:`warc_records` counts the records of the web
    archives by kind (None without one). InvalidPagesError when the input's web archives hold no page."""

    def __init__(self, page_set: PageSet, max_bytes: int = DEFAULT_MAX_PAGE_BYTES, read_files: bool = True) -> None:
        self.page_set = page_set
        self.max_bytes = max_bytes
        self.read_files = read_files
        self.warc_records: dict[str, int] | None = None
        self.met = 0  # pages met so far
        self._warc_bytes = sum(_size(e.file) for e in page_set.entries if isinstance(e, WarcFile))
        self._warc_pages = self._read_bytes = 0  # of the web archives: pages met, bytes read

    def __iter__(self) -> Iterator[Reading]:
        counts = dict.fromkeys(RECORD_KINDS, 0)
        before = 0  # bytes of the web archives read whole
        for entry in self.page_set.entries:
            if isinstance(entry, Page):
                self.met += 1
                yield entry, (page_bytes(entry, self.max_bytes) if self.read_files else None)
                continue
            stream = WarcStream(entry.file, entry.shown, self.max_bytes)
            with warc_refusals(entry.shown):
                for item in stream:
                    self.met += 1
                    self._warc_pages += 1
                    self._read_bytes = before + stream.position
                    yield Page(item.id, item.url, entry.shown, entry.file, item.charset, item.ref), item.payload
            before += stream.size
            for kind, count in stream.kinds.items():
                counts[kind] += count
        if self.page_set.known_pages is None:
            self.warc_records = {k: v for k, v in counts.items() if v}
            if not self.met:
                raise no_pages_error(self.page_set.source, counts)

    @property
    def counted(self) -> PageSet:
        """The page set with its web archives' records counted (once they are read)."""
        return replace(self.page_set, warc_records=self.warc_records)

    def input_bytes(self) -> int:
        """The bytes of the input's pages and web archives (one size asked per page file)."""
        return self._warc_bytes + sum(e.weight for e in self.page_set.entries if isinstance(e, Page))

    def expected(self) -> int:
        """The pages the input is expected to have: those met, and the web archives' rest by the bytes still to
        read (for progress only; exact once every web archive is read)."""
        known = self.page_set.known_pages
        if known is not None:
            return known
        total, read = self._warc_bytes, min(self._read_bytes, self._warc_bytes)
        files = sum(isinstance(e, Page) for e in self.page_set.entries)
        rest = self._warc_pages * (total - read) // read if read else 0
        return max(self.met, files + self._warc_pages + rest)


def page_bytes(page: Page, max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> bytes | BaseException:
    """The page file's bytes (tried again after a transient I/O error), or why they cannot be read
    (:data:`UNREADABLE_PAGE_ERRORS`); a store's failure is raised (the run fails, its retries may cure it)."""
    try:
        # an object's calls are tried again by its store, within the run's patience: not twice
        within = 0.0 if isinstance(page.file, ObjectPath) else READ_PATIENCE_SECONDS
        return retried(lambda: read_page(page, max_bytes), within)
    except SelectionError:
        raise
    except UNREADABLE_PAGE_ERRORS as exc:
        return exc


def read_error(page: Page, exc: BaseException) -> str:
    """The error of every block of a page that cannot be read."""
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(str(exc).split())
    what = f"page {page.path}"
    if page.warc is not None:
        where = "" if page.warc.offset is None else f" (offset {page.warc.offset})"
        what = f"WARC record {page.warc.ordinal}{where} of {page.path}"
    return f"{type(exc).__name__}: cannot read {what}: {detail or '(no message)'}"
