"""The refusal of a whole JSON batch, computed one run of articles at a time (bounded memory).

Two cases: the batch was delimited (:func:`whole_file_refusal`), or the lexer gave up
inside its ``articles`` array (:func:`prefix_refusal`, at the end of this module).

:func:`whole_file_refusal` raises exactly the error that
``selection_core.parse_batch(read_input(path), str(path))`` would raise (same
check, same place in the whole file, same words), or returns None when the
whole document is valid, but never holds more than the envelope (the document
without its articles, ``RunLayout.open``/``close``) and one run of articles.
The messages are built by the functions of :mod:`selection_core.batch` that
``parse_batch`` uses, given the run's first article index and where the run
starts in the whole file (:class:`~selection_core.batch.TextPoint`).

``parse_batch`` decides in this order, and so does this module:

1. the first bytes (empty, byte-order mark, UTF-16): the envelope starts with them;
2. invalid UTF-8 anywhere, at the first bad byte (orjson checks the UTF-8 of the
   whole input before it parses, so a bad byte near the end beats an earlier
   syntax error): every piece is decoded in document order;
3. the first JSON error in document order: before the articles, in a run, after
   the articles;
4. the first article that is not an object;
5. nesting deeper than ``MAX_DEPTH``: ``walk_values`` visits the root's values from
   the last to the first, so a key after ``articles`` first, then the articles
   from the last to the first, then the keys before ``articles``;
6. only when the document holds a float or its key count differs from its
   members, the first exact problem (duplicate key, inexact float, integer beyond
   64 bits) in document order: a duplicate key of the root, then the keys before
   ``articles``, the runs, the keys after. Only a piece that passes the same test
   on its own can hold one (``exact_check_needed``), so a run is checked exactly
   while it is read, and the file is read once.

Pieces join where the text is ASCII (``[``, ``]``, commas and whitespace), so a
piece decodes, parses and counts as it would inside the whole document.

One known difference, on purpose: orjson parses into a buffer sized from the
input's length, and guesses how many values it holds from whether the root's
``{`` is followed by two whitespace characters (an indented document: fewer
values per byte). A valid document much denser than that guess (hundreds of
empty brackets in a row) makes the whole-document parse fail with "failed to
allocate memory" at some place, an answer about the parser's buffer, not about
the input, that no piece can reproduce (a run is parsed as ``RUN_PREFIX`` + run,
which orjson reads as compact). There this module gives the input's own first
refusal, or None (``tests/storage/test_refusal.py`` pins the case).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import orjson

from selection_core.batch import (
    TextPoint,
    check_articles,
    check_exact,
    check_start,
    exact_check_needed,
    exact_node_error,
    exact_tree,
    shifted_json_error,
    too_deep_error,
    top_values,
    utf8_error,
    utf8_error_offset,
    walk_values,
)
from selection_core.errors import InvalidBatchError
from selection_core.layout import RUN_PREFIX, RUN_SUFFIX, Run, RunLayout
from selection_storage.files import FileIdentity, read_span

__all__ = ["ORJSON_BUFFER_FULL", "whole_file_refusal"]

#: orjson's message when a document is denser than the buffer it sized from its length.
ORJSON_BUFFER_FULL: Final[str] = "failed to allocate memory"

#: Largest read of the whitespace and commas between runs (only counted, for the lines).
GAP_BLOCK: Final[int] = 1 << 20

# Where a run starts in the text orjson parses: just after RUN_PREFIX.
_RUN_START: Final[TextPoint] = TextPoint().advance(RUN_PREFIX)


@dataclass
class _Scan:
    """What the first pass over the runs found, kept in the order ``parse_batch`` decides."""

    source: str
    syntax: InvalidBatchError | None = None  # the first JSON error before or in the articles
    not_object: InvalidBatchError | None = None  # the first article that is not an object
    deep_article: str | None = None  # the last article nested too deeply
    exact: InvalidBatchError | None = None  # the first exact problem of the runs
    parse_runs: bool = True  # False once only invalid UTF-8 can still change the answer

    def run(self, buf: bytearray, run: Run, origin: TextPoint) -> None:
        """Check one run (``RUN_PREFIX + bytes + RUN_SUFFIX``, valid UTF-8) starting at ``origin``."""
        if not self.parse_runs:
            return
        try:
            doc = orjson.loads(buf)
        except orjson.JSONDecodeError as exc:
            self.syntax = shifted_json_error(self.source, exc, _RUN_START, origin)
            self.parse_runs = False
            return
        if self.not_object is not None:  # a later JSON error still beats it
            return
        try:
            check_articles(doc["articles"], self.source, run.start)
        except InvalidBatchError as exc:
            self.not_object = exc
            return
        walk = walk_values(top_values(doc.items(), run.start))
        if walk.too_deep is not None:
            self.deep_article = walk.too_deep
        elif (
            self.deep_article is None
            and self.exact is None
            and exact_check_needed(buf, len(doc) + walk.members, walk.has_float)
        ):
            # While the run is here, rather than reading it again: if an earlier check
            # fails later in the file, this work is wasted, but batches rarely hold floats.
            try:
                articles = exact_tree(buf, self.source)["articles"]
                check_exact([(a, ("articles", run.start + i)) for i, a in enumerate(articles)], self.source)
            except InvalidBatchError as exc:
                self.exact = exc


@dataclass
class _Envelope:
    """The document without its articles (``data[:open + 1] + data[close:]``), checked as far as it alone can be."""

    data: bytearray
    head_size: int  # bytes before the articles (up to their ``[``)
    head_end: TextPoint  # where the head ends, in the whole document as in the envelope
    tail_bad: int | None  # offset in the tail of its first invalid UTF-8, if any
    doc: dict[str, Any] | None  # parsed, when it is valid UTF-8 and JSON
    head_syntax: InvalidBatchError | None  # a JSON error before the articles
    tail_exc: orjson.JSONDecodeError | None  # a JSON error after them (placed once the runs are counted)

    @classmethod
    def read(cls, path: Path, identity: FileIdentity, layout: RunLayout, source: str) -> _Envelope:
        head_size = layout.open + 1
        data = read_span(path, identity, layout.close, identity.size, bytes(read_span(path, identity, 0, head_size)))
        check_start(data, source)
        try:
            head_end = TextPoint().advance(data, 0, head_size)
        except UnicodeDecodeError as exc:
            raise utf8_error(source, data, exc.start) from None
        envelope = cls(data, head_size, head_end, utf8_error_offset(data, head_size), None, None, None)
        if envelope.tail_bad is None:
            try:
                envelope.doc = _load_envelope(data)
            except orjson.JSONDecodeError as exc:
                if exc.pos < head_end.char:
                    envelope.head_syntax = shifted_json_error(source, exc, TextPoint(), TextPoint())
                else:
                    envelope.tail_exc = exc
        return envelope


def _load_envelope(data: bytearray) -> dict[str, Any]:
    """orjson's parse of the envelope, with a buffer that cannot run out.

    Cut out of a document, the envelope may be far denser than the document
    (a long value of empty brackets, the articles gone), and orjson may run out
    of the buffer it sized from the length (the module docstring) where the whole
    document does not. Whitespace after the root grows that buffer and moves no
    place before it: at most one value per two bytes, 16 bytes each, grown by
    half at a time, fits in the buffer of twice the length.
    """
    try:
        return cast(dict[str, Any], orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        if ORJSON_BUFFER_FULL not in exc.msg:
            raise
    return cast(dict[str, Any], orjson.loads(data + b" " * len(data)))


def whole_file_refusal(path: Path, identity: FileIdentity, layout: RunLayout) -> None:
    """Raise the InvalidBatchError that parse_batch(read_input(path), str(path)) would raise, reading one run at a time;
    return None if the whole document is valid.

    ``layout`` is the file's layout (the scan succeeded). Reads the envelope, then
    each run once, in order, with :func:`~selection_storage.files.read_span` (and the
    commas and whitespace between runs in blocks of at most :data:`GAP_BLOCK` bytes).

    Raises:
        InvalidBatchError: the whole document's refusal.
        InputChangedError, ReadError: as ``read_span``.
    """
    source = str(path)
    envelope = _Envelope.read(path, identity, layout, source)
    scan = _Scan(source, syntax=envelope.head_syntax)
    scan.parse_runs = envelope.tail_bad is None and envelope.head_syntax is None
    point, done = envelope.head_end, envelope.head_size
    for run in layout.runs:
        point = _advance_gap(path, identity, done, run.begin, point)
        buf = read_span(path, identity, run.begin, run.end, RUN_PREFIX, RUN_SUFFIX)
        try:
            after = point.advance(buf, len(RUN_PREFIX), len(buf) - len(RUN_SUFFIX))
        except UnicodeDecodeError as exc:
            raise utf8_error(source, buf, len(RUN_PREFIX) + exc.start, len(RUN_PREFIX), point) from None
        scan.run(buf, run, point)
        del buf  # one run at a time: not alive while the next one is read
        point, done = after, run.end
    point = _advance_gap(path, identity, done, layout.close, point)
    if envelope.tail_bad is not None:
        raise utf8_error(source, envelope.data, envelope.head_size + envelope.tail_bad, envelope.head_size, point)
    if scan.syntax is not None:
        raise scan.syntax
    if envelope.tail_exc is not None:
        raise shifted_json_error(source, envelope.tail_exc, envelope.head_end, point)
    if scan.not_object is not None:
        raise scan.not_object
    _envelope_exact_check(envelope, scan, source)


def _advance_gap(path: Path, identity: FileIdentity, start: int, end: int, point: TextPoint) -> TextPoint:
    """``point`` moved over the file's bytes ``start .. end`` (whitespace and commas), read in blocks."""
    while start < end:
        stop = min(end, start + GAP_BLOCK)
        point = point.advance(read_span(path, identity, start, stop))
        start = stop
    return point


def _envelope_exact_check(envelope: _Envelope, scan: _Scan, source: str) -> None:
    """Steps 5 and 6 of the module docstring, around what the runs found."""
    assert envelope.doc is not None  # parsed, since neither its UTF-8 nor its JSON failed
    pairs = list(envelope.doc.items())
    cut = [key for key, _ in pairs].index("articles")
    before, after = walk_values(top_values(pairs[:cut])), walk_values(top_values(pairs[cut + 1 :]))
    for place in (after.too_deep, scan.deep_article, before.too_deep):
        if place is not None:
            raise too_deep_error(source, place)
    members = len(envelope.doc) + before.members + after.members
    if exact_check_needed(envelope.data, members, before.has_float or after.has_float):
        tree = exact_tree(envelope.data, source)
        root_error = exact_node_error(tree, (), source)  # a duplicate key of the root comes first
        if root_error is not None:
            raise root_error
        check_exact([(value, (key,)) for key, value in list(tree.items())[:cut]], source)
        if scan.exact is not None:
            raise scan.exact
        check_exact([(value, (key,)) for key, value in list(tree.items())[cut + 1 :]], source)
    elif scan.exact is not None:
        raise scan.exact


#: Characters an orjson error must lie before the end of a cut piece to be the whole document's:
#: an error nearer the end may be the cut's (a literal or number that goes on after it).
CUT_MARGIN: Final[int] = 64


def prefix_refusal(path: Path, identity: FileIdentity, opened: int, runs: tuple[Run, ...]) -> None:
    """The whole document's refusal when its articles could be delimited only up to a point.

    The lexer delimited the ``articles`` array's ``[`` (at ``opened``) and the articles
    of ``runs``, then gave up inside the array (an article cut short at the end of the
    file, unbalanced brackets, a missing comma). The lexer is exact on valid JSON, so
    the document holds a JSON error: the first invalid UTF-8 anywhere (orjson checks
    the whole input first), else the first JSON error in document order, in the head,
    in a run, or after the last delimited article. That last one is found by parsing
    the rest of the file behind ``{"articles":[0`` (orjson in the state it is in after
    an article), in pieces that double until the error lies well before a piece's end,
    so a batch cut short costs one article's memory, not the batch's.

    Raises:
        InvalidBatchError: the whole document's refusal.
        InputChangedError, ReadError: as ``read_span``.

    Returns None when no refusal was found this way (then only the whole-document parse can decide).
    """
    source = str(path)
    head_size = opened + 1
    head = read_span(path, identity, 0, head_size)
    check_start(head if identity.size >= 3 else read_span(path, identity, 0, identity.size), source)
    _check_utf8(path, identity, source)
    head_end = TextPoint().advance(head)
    try:
        orjson.loads(head + b"]}")
    except orjson.JSONDecodeError as exc:
        if exc.pos < head_end.char:
            raise shifted_json_error(source, exc, TextPoint(), TextPoint()) from None
    scan = _Scan(source)
    point, done = head_end, head_size
    for run in runs:
        point = _advance_gap(path, identity, done, run.begin, point)
        buf = read_span(path, identity, run.begin, run.end, RUN_PREFIX, RUN_SUFFIX)
        after = point.advance(buf, len(RUN_PREFIX), len(buf) - len(RUN_SUFFIX))
        scan.run(buf, run, point)
        del buf
        if scan.syntax is not None:
            raise scan.syntax
        point, done = after, run.end
    return _rest_refusal(path, identity, source, done, point, after_article=bool(runs))


def _whole_characters(data: bytes | bytearray, start: int = 0) -> int:
    """The end of ``data`` cut before a last character that may go on after it (UTF-8: at most 4 bytes)."""
    end = len(data)
    for back in range(1, min(4, end - start) + 1):
        byte = data[end - back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # a lead byte: its character may be cut
            return end - back
    return end


def _check_utf8(path: Path, identity: FileIdentity, source: str) -> None:
    """Refuse the first invalid UTF-8 of the file, read in blocks cut where no character is split."""
    point, start = TextPoint(), 0
    while start < identity.size:
        block = read_span(path, identity, start, min(identity.size, start + max(GAP_BLOCK, 8)))
        end = len(block) if start + len(block) == identity.size else _whole_characters(block) or len(block)
        try:
            point = point.advance(block, 0, end)
        except UnicodeDecodeError as exc:
            raise utf8_error(source, block, exc.start, 0, point) from None
        start += end


def _rest_refusal(
    path: Path, identity: FileIdentity, source: str, start: int, origin: TextPoint, after_article: bool
) -> None:
    """The first JSON error of the file from ``start`` on (just after an article, or after ``[``)."""
    prefix = RUN_PREFIX + (b"0" if after_article else b"")
    local = TextPoint().advance(prefix)
    size = GAP_BLOCK
    while True:
        stop = min(identity.size, start + size)
        piece = read_span(path, identity, start, stop, prefix)
        if stop < identity.size:  # never a character cut in two (the file's UTF-8 was checked whole)
            del piece[_whole_characters(piece, len(prefix)) :]
        try:
            orjson.loads(piece)
        except orjson.JSONDecodeError as exc:
            if ORJSON_BUFFER_FULL in exc.msg:
                return None
            chars = local.advance(piece, len(prefix)).char
            if stop == identity.size or exc.pos < chars - CUT_MARGIN:
                raise shifted_json_error(source, exc, local, origin) from None
        else:
            if stop == identity.size:
                return None
        size *= 2
