"""JSON Lines batches (one article object per line, ``docs/rule.md``): bytes in, articles out, and back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import orjson

from .batch import ARTICLE_DEPTH, check_values, invalid_json, needs_close_look, path_text, wrong_type_error
from .errors import InvalidBatchError
from .layout import array_spans, check_start

#: How the name of a JSON Lines batch ends; any other batch is a JSON document.
JSONL_SUFFIX: Final[str] = ".jsonl"

_FIX_LINE: Final[str] = "every line must be one article, a JSON object"
_WHITESPACE: Final[bytes] = b" \t\r"  # JSON whitespace within a line
#: Bytes of lines parsed in one orjson call (whole lines: a piece ends at the first newline after this).
_PIECE_BYTES: Final[int] = 1 << 20


def is_jsonl(name: str) -> bool:
    """Whether a batch of this file name is JSON Lines (it ends with :data:`JSONL_SUFFIX`, in any case)."""
    return name.lower().endswith(JSONL_SUFFIX)


def parse_lines(
    data: bytes, source: str = "<input>", first_line: int = 1, first_offset: int = 0
) -> list[dict[str, Any]]:
    r"""The articles of whole lines of a JSON Lines batch, one per line, validated.

    Args:
        data: Whole lines of the file, each ending with ``\n`` (the file's last may lack it).
        source: How messages name the file.
        first_line: The 1-based number of ``data``'s first line in the file.
        first_offset: The byte offset of ``data``'s first byte in the file (0: check the file's start).

    Raises:
        InvalidBatchError: for the first invalid line: the line number, the place within the line and the fix.
    """
    if not data:
        return []
    if first_offset == 0:
        check_start(data[:3], source)  # not empty: only the byte-order mark and UTF-16 checks can refuse
    articles: list[dict[str, Any]] = []
    start, end = 0, len(data)
    while start < end:  # in pieces of whole lines, one orjson call each: the newlines turned into commas
        stop = data.find(b"\n", min(start + _PIECE_BYTES, end) - 1)
        stop = end if stop < 0 else stop
        values = _parse_piece(data[start:stop])
        if values is None:
            return _parse_line_by_line(data, source, first_line, first_offset)
        articles += values
        start = stop + 1
    if needs_close_look(data, [(a, ARTICLE_DEPTH, "") for a in articles], 0):
        return _parse_line_by_line(data, source, first_line, first_offset)  # the error is worded with its line there
    return articles


def _parse_piece(body: bytes) -> list[dict[str, Any]] | None:
    """The objects of whole lines (``body``: without the last newline), one per line; None when not that."""
    joined = b"[" + body.replace(b"\n", b",") + b"]"
    try:
        values = orjson.loads(joined)
    except orjson.JSONDecodeError:
        return None
    if len(values) != body.count(b"\n") + 1 or not all(type(v) is dict for v in values):
        return None
    # As many objects as lines is not enough (``[1`` / ``2],{}``): a newline must lie between every two.
    spans = array_spans(joined, 0)
    if spans is None:  # cannot happen for valid JSON; the line-by-line path decides
        return None
    _, starts, ends = spans
    find = body.find  # ``body`` is ``joined`` one byte later
    return values if all(find(b"\n", end - 1, start - 1) >= 0 for end, start in zip(ends, starts[1:])) else None


def _parse_line_by_line(data: bytes, source: str, first_line: int, first_offset: int) -> list[dict[str, Any]]:
    """:func:`parse_lines` one line at a time: slower, and the first bad line's error in its words."""
    lines = data.split(b"\n")
    if not lines[-1]:  # the last line's newline
        lines.pop()
    articles: list[dict[str, Any]] = []
    offset = first_offset
    for number, line in enumerate(lines, first_line):
        articles.append(_parse_line(line, source, number, offset))
        offset += len(line) + 1
    return articles


def _parse_line(line: bytes, source: str, number: int, offset: int) -> dict[str, Any]:
    """The article of one line (without its ``\\n``), line ``number`` of the file, at byte ``offset``."""
    if not line.strip(_WHITESPACE):
        raise InvalidBatchError(
            f"{source}: line {number} is blank; remove it "
            "(a JSON Lines batch has one article on every line, and may end with one newline)"
        )
    try:
        article = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if not line.lstrip(_WHITESPACE).startswith(b"{"):  # not an article at all: plain text, or a scalar and more
            raise invalid_json(source, line, exc, f"line {number} is ", lambda b: offset + b, _FIX_LINE) from None
        if exc.msg == "unexpected content after document":
            raise InvalidBatchError(
                f"{source}: line {number} has more after its article, at column {exc.colno}; "
                "put each article on a line of its own"
            ) from None
        if exc.msg == "unexpected end of data":  # most likely an indented article, over several lines
            raise InvalidBatchError(
                f"{source}: line {number} ends inside its article, at column {exc.colno}; "
                "write each article whole on one line (a JSON Lines batch is not indented)"
            ) from None
        raise invalid_json(source, line, exc, f"line {number} is ", lambda b: offset + b) from None
    if not isinstance(article, dict):
        raise wrong_type_error(source, f"line {number}", article, _FIX_LINE)
    items = [(value, ARTICLE_DEPTH + 1, path_text([key])) for key, value in article.items()]
    check_values(line, items, len(article), f"{source}: line {number}")
    return article


def render_lines(articles: Iterable[dict[str, Any]]) -> bytes:
    """The bytes of articles as lines of a JSON Lines batch: each compact, UTF-8, then a newline."""
    return b"".join([orjson.dumps(article) + b"\n" for article in articles])
