r"""JSON Lines batches: one article, a JSON object, per line. Bytes in, articles out, and back.

Pure functions on bytes and Python values, as :mod:`selection_core.batch` is for the
JSON batch; every rule of the format and every message about it is here.

The format (decided once, here; ``docs/rule.md`` tells users):

* **A line** is the bytes up to a ``\n`` (``\n`` only: U+2028 and a lone ``\r``
  end no line). It holds one article, a JSON object, and may have JSON whitespace
  around it; so a ``\r\n`` ending is accepted (the ``\r`` is whitespace).
* **The last line** may end with ``\n`` or not. A file of 0 bytes is a batch of 0
  articles: that is how an empty JSON Lines file is written.
* **A blank line** (nothing or only whitespace), anywhere, is refused with its
  number, except the empty "line" after the file's final ``\n``. A blank line
  is most likely a file cut or joined by hand, and skipping it would make the
  line numbers of the output differ from the input's.
* **Each article gets every check that an article of a JSON batch gets**, with
  the same meaning and the same wording (built by the same functions of
  :mod:`selection_core.batch`): UTF-8 only, no byte-order mark, no duplicate key,
  no integer beyond 64 bits, no float that a double cannot hold exactly, and no
  nesting deeper than :data:`~selection_core.batch.MAX_DEPTH` **counting the line's
  object as depth 3, the depth an article has inside a batch** (root 1, the
  ``articles`` array 2). So an article is accepted in a JSON Lines file exactly
  when it is accepted in a JSON batch, and a batch converted from one format
  to the other is accepted (and written back) by both. Places inside a line are
  JSON paths from the line's object: ``line 12: $.trafilatura.text``.
* **Kept byte for byte**: every key, value and key order of each line, and the
  order of the lines. **Not kept** (the lines are re-serialized, compactly, by
  :func:`render_lines`): the whitespace inside and around a line's object, the
  spelling of numbers (``1.0E2`` is written ``100.0``) and of strings (``\u00e9``
  is written ``é``, ``\/`` is written ``/``), ``\r\n`` endings (written ``\n``),
  and a missing final newline (every written line ends with ``\n``).

Speed: :func:`parse_lines` parses about 1 MiB of lines in one orjson call (the
newlines turned into commas, inside ``[`` ... ``]``: a raw newline cannot appear
inside a JSON string) and checks with the scanner that each value lies on a line
of its own; only when that fails does it go line by line, to find and word the
first bad line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import orjson

from .batch import (
    ARTICLE_DEPTH,
    check_values,
    exact_check_needed,
    invalid_json,
    path_text,
    walk_values,
    wrong_type_error,
)
from .errors import InvalidBatchError
from .layout import array_spans, check_start

#: How the name of a JSON Lines batch ends; any other batch is a JSON document.
JSONL_SUFFIX: Final[str] = ".jsonl"

_FIX_LINE: Final[str] = "every line must be one article, a JSON object"
_WHITESPACE: Final[bytes] = b" \t\r"  # JSON whitespace within a line
#: Bytes of lines parsed in one orjson call (whole lines: a piece ends at the first newline after this).
_PIECE_BYTES: Final[int] = 1 << 20


def is_jsonl(name: str) -> bool:
    """Whether a batch of this file name is JSON Lines (it ends with :data:`JSONL_SUFFIX`, in any case,
    as the inbox reads a manifest's name).

    >>> is_jsonl("crawl_extracted.jsonl"), is_jsonl("CRAWL.JSONL"), is_jsonl("crawl_extracted.json")
    (True, True, False)
    """
    return name.lower().endswith(JSONL_SUFFIX)


def parse_lines(
    data: bytes, source: str = "<input>", first_line: int = 1, first_offset: int = 0
) -> list[dict[str, Any]]:
    r"""The articles of whole lines of a JSON Lines batch, one per line, validated.

    Args:
        data: Whole lines of the file, each ending with ``\n`` (the file's last
            line may lack it); the whole file, or one chunk of it.
        source: How messages name the file.
        first_line: The 1-based number of ``data``'s first line in the file.
        first_offset: The byte offset of ``data``'s first byte in the file (0:
            the chunk starts the file, which must not start with a byte-order mark).

    Returns:
        The articles, in line order. Parsing a file chunk by chunk, cut anywhere
        between lines, gives the same articles, and the same first error, as
        parsing it whole.

    Raises:
        InvalidBatchError: for the first invalid line, one line naming ``source``,
            the line number, the place within the line and the fix.

    >>> parse_lines(b'{"id": "a1"}\n{"id": "a2"}\r\n')
    [{'id': 'a1'}, {'id': 'a2'}]
    >>> parse_lines(b"")
    []
    >>> parse_lines(b'{"id": 1}\n\n{"id": 2}\n', "b.jsonl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    selection_core.errors.InvalidBatchError: b.jsonl: line 2 is blank; remove it (...)
    """
    if not data:
        return []
    if first_offset == 0:
        check_start(data[:3], source)  # not empty: only the byte-order mark and UTF-16 checks can refuse
    articles: list[dict[str, Any]] = []
    start, end = 0, len(data)
    while start < end:  # in pieces of whole lines: less memory, and faster than one piece of a whole big file
        stop = data.find(b"\n", min(start + _PIECE_BYTES, end) - 1)
        stop = end if stop < 0 else stop
        values = _parse_piece(data[start:stop])
        if values is None:
            return _parse_line_by_line(data, source, first_line, first_offset)
        articles += values
        start = stop + 1
    walk = walk_values([(a, ARTICLE_DEPTH, "") for a in articles])
    if walk.too_deep is not None or exact_check_needed(data, walk.members, walk.has_float):
        return _parse_line_by_line(data, source, first_line, first_offset)  # the error is worded with its line there
    return articles


def _parse_piece(body: bytes) -> list[dict[str, Any]] | None:
    """The objects of whole lines (``body``: without the last line's newline), one per line, in one
    orjson call; None when that is not what the lines hold (then the line-by-line path decides)."""
    joined = b"[" + body.replace(b"\n", b",") + b"]"
    try:
        values = orjson.loads(joined)
    except orjson.JSONDecodeError:
        return None
    return values if _one_article_per_line(values, body.count(b"\n") + 1, body, joined) else None


def _one_article_per_line(values: Any, lines: int, body: bytes, joined: bytes) -> bool:
    """Whether the values orjson read from ``joined`` are objects, one on each line of ``body``.

    As many values as lines is not enough (``[1`` / ``2],{}`` is two values on
    two lines): the scanner delimits the values, and between every two of them
    must lie a newline of ``body`` (``joined`` is ``body`` one byte later). With
    one newline fewer than values, that leaves none inside a value, so each
    line holds exactly one.
    """
    if len(values) != lines or not all(type(v) is dict for v in values):
        return False
    spans = array_spans(joined, 0)
    if spans is None:  # cannot happen for valid JSON; the line-by-line path decides
        return False
    _, starts, ends = spans
    find = body.find
    return all(find(b"\n", end - 1, start - 1) >= 0 for end, start in zip(ends, starts[1:]))


def _parse_line_by_line(data: bytes, source: str, first_line: int, first_offset: int) -> list[dict[str, Any]]:
    """:func:`parse_lines` one line at a time: slower, and the first bad line's error in its words."""
    articles: list[dict[str, Any]] = []
    start = 0
    number = first_line
    end = len(data)
    while start < end:
        stop = data.find(b"\n", start)
        if stop < 0:
            stop = end
        articles.append(_parse_line(data[start:stop], source, number, first_offset + start))
        start = stop + 1
        number += 1
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
    r"""The bytes of articles as lines of a JSON Lines batch: each compact, keys in order,
    UTF-8 (not ASCII-escaped), then ``\n``. Runs rendered separately are joined as they are.

    orjson never writes a raw newline (one inside a string is ``\n``), so every
    article is one line.

    >>> render_lines([{"id": "é", "n": [1, 2]}, {}])
    b'{"id":"\xc3\xa9","n":[1,2]}\n{}\n'
    """
    return b"".join([orjson.dumps(article) + b"\n" for article in articles])
