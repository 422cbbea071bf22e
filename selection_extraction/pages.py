"""The pages of an input: finding them in a folder or a manifest, and reading their bytes.

**Input** (:func:`find_pages`): a directory of ``.html``, ``.htm``, ``.html.gz``
or ``.htm.gz`` pages (searched recursively, hidden entries skipped, in the
order of their relative paths), a single page file, or a JSON Lines manifest,
one page a line::

    {"id": "a1", "url": "https://news.example/a1", "path": "pages/a1.html.gz"}

``path`` is required (relative paths are taken from the manifest's folder); ``id``
defaults to the file name without its extension; ``url`` may be null; an
optional ``encoding`` gives the charset of the HTTP ``Content-Type`` header.
Other keys are ignored.

**Reading** (:func:`read_page_with_retries`): the bytes are read (and gunzipped)
once, up to the size limit, and tried again after a transient I/O error. A page
that cannot be read is described by :func:`read_error`.
"""

from __future__ import annotations

import gzip
import os
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from selection_core.errors import InvalidBatchError
from selection_extraction.settings import DEFAULT_MAX_PAGE_BYTES
from selection_storage.transient import TRANSIENT_ERRNOS

#: File name endings of pages, matched case-insensitively; longest first.
PAGE_SUFFIXES: Final[tuple[str, ...]] = (".html.gz", ".htm.gz", ".html", ".htm")

#: Seconds to wait before each new try of a page read that failed with a transient I/O error.
READ_RETRY_DELAYS: Final[tuple[float, ...]] = (0.2, 1.0)


class InvalidPagesError(InvalidBatchError):
    """The pages input cannot be used (missing, empty directory, bad manifest). Never worth retrying."""


class PageTooLargeError(ValueError):
    """A page is larger than the configured maximum (after decompression)."""


#: What reading a page may raise for that page alone: it becomes an article with three error blocks.
UNREADABLE_PAGE_ERRORS: Final[tuple[type[BaseException], ...]] = (OSError, EOFError, PageTooLargeError, zlib.error)


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
    kind: str  # "directory" | "manifest" | "page" | "chunk"
    pages: tuple[Page, ...]


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
        bad_line = data[: exc.start].count(b"\n") + 1
        raise InvalidPagesError(f"{manifest}: line {bad_line} is not UTF-8; save the manifest as UTF-8") from None
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


def read_error(page: Page, exc: BaseException) -> str:
    """The error of every block of a page that cannot be read: ``"<ExceptionType>: cannot read page <path>: ..."``."""
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(str(exc).split())
    return f"{type(exc).__name__}: cannot read page {page.path}: {detail or '(no message)'}"
