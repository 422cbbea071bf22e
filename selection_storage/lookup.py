"""One article of a batch file, found without loading the batch (for ``content-selection explain``).

The articles are delimited in the file's bytes as for a chunked run
(:func:`selection_core.layout.scan_layout`, over a read-only mapping of the file), the
envelope is validated, and only the bytes of the article asked for are parsed, in full,
as a batch of their own. An id is looked for chunk by chunk (:data:`LOOKUP_CHUNK_ARTICLES`
articles parsed at a time), so memory is bounded by a chunk whatever the batch's size. The
rest of the batch is not validated: ``select`` and ``run`` do that. A batch whose articles
cannot be delimited without parsing (or whose envelope is invalid) is parsed whole, which
also gives the one-line message of ``select`` for an invalid batch.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import selection_core as sc
from selection_core.layout import RUN_PREFIX, RUN_SUFFIX, BatchLayout, envelope_bytes, scan_layout
from selection_storage.chunks import canonical_error
from selection_storage.files import open_input, read_error, read_input

#: Articles parsed at a time while an id is looked for.
LOOKUP_CHUNK_ARTICLES: Final[int] = 1000


@dataclass(frozen=True)
class FoundArticle:
    """An article, its index in the batch and the batch's number of articles."""

    index: int
    article: dict[str, Any]
    total: int


def _id_matches(value: Any, wanted: str) -> bool:
    """Whether an article's ``id`` is ``wanted`` (a number matches its JSON spelling: id 7 is ``7``)."""
    if value is None:
        return False
    return value == wanted if isinstance(value, str) else json.dumps(value) == wanted


def _not_found(path: Path, total: int, index: int | None, article_id: str | None) -> sc.ArticleNotFoundError:
    if article_id is not None:
        return sc.ArticleNotFoundError(f"{path}: no article has the id {article_id!r}; check the id, or use --index")
    span = f"indexes 0 to {total - 1}" if total else "none"
    return sc.ArticleNotFoundError(f"{path}: no article at index {index}; the batch has {total} articles ({span})")


def _pick(path: Path, articles: list[dict[str, Any]], index: int | None, article_id: str | None) -> FoundArticle:
    total = len(articles)
    if index is not None and 0 <= index < total:
        return FoundArticle(index, articles[index], total)
    if article_id is not None:
        for i, article in enumerate(articles):
            if _id_matches(article.get("id"), article_id):
                return FoundArticle(i, article, total)
    raise _not_found(path, total, index, article_id)


@contextmanager
def _mapped(path: Path) -> Iterator[bytes]:
    """The file's bytes through a read-only mapping (``b""`` for an empty file)."""
    with open_input(path) as fh:
        try:
            if os.fstat(fh.fileno()).st_size == 0:
                yield b""
                return
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                yield cast(bytes, mapped)
        except OSError as exc:
            if isinstance(exc, sc.SelectionError):
                raise
            raise read_error(path, exc) from exc


def _run(path: Path, data: bytes, layout: BatchLayout, start: int, stop: int) -> list[dict[str, Any]]:
    """Articles ``start .. stop - 1``, parsed and validated as a batch of their own."""
    begin, end = layout.run_span(start, stop)
    where = f"{path} (articles {start}..{stop - 1})"
    try:
        return cast(list[dict[str, Any]], sc.parse_batch(RUN_PREFIX + data[begin:end] + RUN_SUFFIX, where)["articles"])
    except sc.InvalidBatchError:
        canonical_error(path)  # the whole-document message, with the place in the whole file
        raise


def find_article(
    input_path: str | os.PathLike[str], *, index: int | None = None, article_id: str | None = None
) -> FoundArticle:
    """The article at ``index``, or the first whose ``id`` is ``article_id`` (give exactly one).

    Raises:
        InvalidBatchError: the file is missing, unreadable or not a valid batch (as far as it was read).
        ArticleNotFoundError: no article at that index, or none with that id.
        ReadError: a transient read error.
    """
    if (index is None) == (article_id is None):
        raise ValueError("give exactly one of index and article_id")
    path = Path(input_path)
    with _mapped(path) as data:
        layout = scan_layout(data)
        if layout is not None and _valid_envelope(path, envelope_bytes(data, layout)):
            total = layout.articles
            if index is not None:
                if not 0 <= index < total:
                    raise _not_found(path, total, index, None)
                return FoundArticle(index, _run(path, data, layout, index, index + 1)[0], total)
            for start in range(0, total, LOOKUP_CHUNK_ARTICLES):
                stop = min(start + LOOKUP_CHUNK_ARTICLES, total)
                for offset, article in enumerate(_run(path, data, layout, start, stop)):
                    if _id_matches(article.get("id"), cast(str, article_id)):
                        return FoundArticle(start + offset, article, total)
            raise _not_found(path, total, None, article_id)
    doc = sc.parse_batch(read_input(path), str(path))  # not delimited: the whole document decides
    return _pick(path, doc["articles"], index, article_id)


def _valid_envelope(path: Path, data: bytes) -> bool:
    try:
        sc.parse_batch(data, str(path))
    except sc.InvalidBatchError:
        return False
    return True
