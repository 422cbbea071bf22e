"""Batch documents: validate bytes into a document, select, apply, serialize.

Pure functions on bytes and Python values; ``selection_storage.files`` does the files.

How values that a fast JSON parser cannot hold are treated (decided once, here):

* an integer beyond 64 bits (orjson would turn it into a float): refused, with
  its place, because writing it back would change it;
* duplicate keys in one object (orjson would keep only the last): refused,
  with its place, because one value would be lost;
* a UTF-8 byte-order mark, UTF-16, invalid UTF-8, lone surrogates, NaN and
  Infinity: refused, since none of them is valid UTF-8 JSON (RFC 8259).

Everything else round-trips: keys, key order, values and the order of articles.
Only insignificant whitespace and the spelling of numbers (``1.0E2`` becomes
``100.0``) may differ from the input, because the output is re-serialized.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from .config import EXTRACTORS, SELECTED_KEY
from .errors import InvalidBatchError
from .select import Pool, Reason, Selection, select_article

ProgressCallback = Callable[[int, int], None]

# A JSON string token; when followed by ':' it is an object key. In valid JSON
# every '"' outside a string starts a string, so scanning with this pattern from
# left to right visits exactly the document's strings.
_STRING_OR_KEY = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"([ \t\n\r]*:)?', re.DOTALL)
_KEY_SPACE_COLON = re.compile(rb'"[ \t\n\r]+:')
_INT64_MIN = -(2**63)
#: Deepest nesting of arrays and objects (the root counts as 1) that orjson writes.
MAX_DEPTH = 254
#: The depth of an article inside a batch: the root is 1, its ``articles`` array 2.
ARTICLE_DEPTH = 3
_UINT64_MAX = 2**64 - 1
_TYPE_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}
_FIX_SHAPE = 'expected {"articles": [ {...}, ... ]}'
_FIX_ARTICLE = "every article must be a JSON object"


def _type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def path_text(path: Sequence[str | int]) -> str:
    """``$.articles[3].trafilatura``; a very deep path keeps its two ends."""
    if len(path) > 16:
        return path_text(path[:8]) + "..." + path_text(path[-6:])[1:]
    out = "$"
    for part in path:
        out += (
            f"[{part}]"
            if isinstance(part, int)
            else f".{part}"
            if part.isidentifier()
            else f"[{json.dumps(part, ensure_ascii=False)}]"
        )
    return out


@dataclass(frozen=True)
class Walk:
    """What :func:`walk_values` found: object members, whether any float, the first place too deep.

    ``too_deep`` is the place of the item (a top-level key's path or ``$.articles[i]``
    in a batch, a key's path in a JSON Lines line) holding the first value the
    walk met that is nested more than :data:`MAX_DEPTH` levels deep, or None;
    the walk stops there, so the counts are then partial.
    """

    members: int
    has_float: bool
    too_deep: str | None


#: A value to walk: the value, its depth (the root counts as 1) and the place a message names.
WalkItem = tuple[Any, int, str]


def top_values(pairs: Iterable[tuple[str, Any]], first_index: int = 0) -> list[WalkItem]:
    """The root's values as :func:`walk_values` takes them, ``articles`` expanded into its articles.

    ``first_index`` is the index in the whole batch of the first article, when
    ``pairs`` are those of one run of it (``$.articles[i]`` names whole-batch indices).
    """
    items: list[WalkItem] = []
    for key, value in pairs:
        if key == "articles" and isinstance(value, list):
            items.extend((v, ARTICLE_DEPTH, f"$.articles[{first_index + i}]") for i, v in enumerate(value))
        else:
            items.append((value, 2, path_text([key])))
    return items


def walk_values(items: list[WalkItem]) -> Walk:
    """Count object members below ``items``, tell whether they hold any float, find nesting too deep.

    The values are visited from the LAST item to the first, each one whole
    before the one before it, so :attr:`Walk.too_deep` is the place of the last
    item nested too deeply. Iterative, so that deeply nested input cannot
    exhaust the Python stack. ``items`` is consumed.
    """
    members = 0
    has_float = False
    stack = items
    while stack:
        node, depth, place = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                return Walk(members, has_float, place)
            members += len(node)
            stack.extend((v, depth + 1, place) for v in node.values() if isinstance(v, (dict, list, float)))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                return Walk(members, has_float, place)
            stack.extend((v, depth + 1, place) for v in node if isinstance(v, (dict, list, float)))
        elif isinstance(node, float):
            has_float = True
    return Walk(members, has_float, None)


def too_deep_error(source: str, place: str) -> InvalidBatchError:
    """The refusal of a value nested more than :data:`MAX_DEPTH` levels deep."""
    return InvalidBatchError(
        f"{source}: {place} is nested more than {MAX_DEPTH} levels deep, more than can be written back "
        "exactly; flatten that value"
    )


class _InexactNumber(str):
    """A number literal that a 64-bit float would change (kept as its text)."""


def _exact_float(text: str) -> Any:
    """``parse_float`` hook: the float, or a marker when the float is not exact.

    A literal with at most 15 significant digits in the normal range always
    survives the round trip (DBL_DIG); anything else is compared exactly.
    """
    value = float(text)
    mantissa, _, _ = text.lower().partition("e")
    digits = mantissa.lstrip("-").replace(".", "").lstrip("0").rstrip("0")
    if len(digits) <= 15 and (value == 0.0 and not digits or 1e-300 < abs(value) < 1e300):
        return value
    if Decimal(repr(value)) == Decimal(text):
        return value
    return _InexactNumber(text)


class _DupDict(dict):  # type: ignore[type-arg]
    duplicate: str = ""


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        marked = _DupDict(pairs)
        marked.duplicate = dup
        return marked
    return d


def exact_tree(data: bytes | bytearray, source: str) -> Any:
    """The document parsed exactly: every key kept (:class:`_DupDict` marks a duplicate),
    integers of any size, and the text of every float literal a double would change.

    The standard library parser's recursion follows the interpreter's limit,
    which is raised for the call to cover orjson's own nesting limit (1024).
    """
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * 1024 + 200))
    try:
        return json.loads(data, object_pairs_hook=_pairs_hook, parse_float=_exact_float)
    except RecursionError:
        raise InvalidBatchError(f"{source}: nested too deeply to check exactly; flatten the document") from None
    finally:
        sys.setrecursionlimit(limit)


#: A value of an exact tree and its path from the root.
ExactItem = tuple[Any, tuple[str | int, ...]]


def exact_node_error(node: Any, path: tuple[str | int, ...], source: str) -> InvalidBatchError | None:
    """The refusal of one node of an :func:`exact_tree` itself (not of what it holds), or None."""
    if isinstance(node, _DupDict):
        return InvalidBatchError(
            f"{source}: {path_text(path)} has the key {json.dumps(node.duplicate, ensure_ascii=False)} "
            "more than once, so one of its values would be lost; remove or rename the duplicate"
        )
    if isinstance(node, _InexactNumber):
        shown = node if len(node) <= 40 else node[:37] + "..."
        return InvalidBatchError(
            f"{source}: {path_text(path)} is the number {shown}, which a 64-bit float cannot hold "
            f"exactly (it would be written as {float(node)!r}); store it as a string"
        )
    if isinstance(node, int) and not isinstance(node, bool) and not _INT64_MIN <= node <= _UINT64_MAX:
        return InvalidBatchError(
            f"{source}: {path_text(path)} is an integer beyond 64 bits ({str(node)[:30]}...), which "
            "cannot be kept exactly; store it as a string"
        )
    return None


def check_exact(items: Iterable[ExactItem], source: str) -> None:
    """Raise the first exact problem in ``items`` and below them, in document order (``items`` in order)."""
    stack: list[ExactItem] = list(items)
    stack.reverse()
    while stack:
        node, path = stack.pop()
        error = exact_node_error(node, path, source)
        if error is not None:
            raise error
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(node))))


def find_exact_problem(data: bytes | bytearray, source: str) -> None:
    """Slow path, only for suspicious text (:func:`exact_check_needed`): re-parse exactly and explain."""
    check_exact([(exact_tree(data, source), ())], source)


def exact_check_needed(data: bytes | bytearray, members: int, has_float: bool) -> bool:
    """Whether the JSON text ``data`` may hold an exact problem, given what a walk of its parse found:
    ``members``, the members of all its objects, and whether it holds any float.

    A float may be an integer beyond 64 bits that orjson silently converted, or
    a literal that a double cannot hold exactly (``1e-400``, 25 digits). A text
    without a float whose key count is its member count has no exact problem: a
    duplicate key makes the count exceed the members (every count, fast or exact,
    is at least the members), an inexact number or an integer beyond 64 bits is a
    float to orjson. So of pieces of a document, only those that pass this test
    on their own can hold one, and where none does, the whole document's own test
    may differ but its exact check finds nothing.
    """
    return has_float or count_keys(data) != members


def check_values(data: bytes | bytearray, items: list[WalkItem], members: int, source: str) -> None:
    """The checks of a parsed object's values, after its shape: nesting deeper than :data:`MAX_DEPTH`
    (:func:`walk_values`' order), then, only where :func:`exact_check_needed`, the first exact problem.

    ``data`` is the object's text, ``items`` its values as :func:`walk_values` takes
    them (consumed), ``members`` the object's own member count.
    """
    walk = walk_values(items)
    if walk.too_deep is not None:
        raise too_deep_error(source, walk.too_deep)
    if exact_check_needed(data, members + walk.members, walk.has_float):
        find_exact_problem(data, source)


def utf8_error_offset(data: bytes | bytearray, start: int = 0) -> int | None:
    """Offset (from ``start``) of the first invalid UTF-8 sequence in ``data[start:]``, or None if it is UTF-8."""
    try:
        str(memoryview(data)[start:], "utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


@dataclass(frozen=True)
class TextPoint:
    """A point in a document's text, where a piece of it starts: what a refusal's place is counted from.

    ``byte`` and ``char`` are the offsets of the point in bytes and in characters
    (code points, as orjson counts them); ``line`` is its line (from 1) and
    ``line_byte``/``line_char`` the offsets where that line starts. The default
    is the start of a document.

    >>> TextPoint().advance("é\\nab".encode())
    TextPoint(byte=5, char=4, line=2, line_byte=3, line_char=2)
    """

    byte: int = 0
    char: int = 0
    line: int = 1
    line_byte: int = 0
    line_char: int = 0

    def advance(self, data: bytes | bytearray, start: int = 0, end: int | None = None) -> TextPoint:
        """The point just after ``data[start:end]``, which starts at this point.

        Raises:
            UnicodeDecodeError: the bytes are not UTF-8 (its ``start`` is relative to ``start``).
        """
        end = len(data) if end is None else end
        text = str(memoryview(data)[start:end], "utf-8")
        newlines = text.count("\n")
        if not newlines:
            return TextPoint(self.byte + end - start, self.char + len(text), self.line, self.line_byte, self.line_char)
        return TextPoint(
            self.byte + end - start,
            self.char + len(text),
            self.line + newlines,
            self.byte + data.rfind(b"\n", start, end) + 1 - start,
            self.char + text.rfind("\n") + 1,
        )


def check_start(data: bytes | bytearray, source: str) -> None:
    """The refusals decided by a document's first bytes: empty, a byte-order mark, UTF-16.

    Any prefix of at least 3 bytes of a document decides as the whole does (a
    JSON Lines file, which may be empty, passes its first 3 bytes when it is not).
    """
    if not data:
        raise InvalidBatchError(f"{source}: the file is empty (0 bytes); {_FIX_SHAPE}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvalidBatchError(f"{source}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) >= 2 and (data[0] == 0 or data[1] == 0)):
        raise InvalidBatchError(f"{source}: looks like UTF-16, not UTF-8; convert it to UTF-8")


def utf8_error(
    source: str, data: bytes | bytearray, bad: int, start: int = 0, origin: TextPoint = TextPoint()
) -> InvalidBatchError:
    """The refusal of the invalid UTF-8 sequence at ``data[bad]``, in a piece of a document.

    The piece is ``data[start:]`` and starts at ``origin`` in the whole document
    (by default, ``data`` is the whole document). Line, column and offset count bytes.
    """
    newline = data.rfind(b"\n", start, bad)
    line = origin.line + data.count(b"\n", start, bad)
    column = bad - newline if newline >= 0 else origin.byte + bad - start - origin.line_byte + 1
    offset = origin.byte + bad - start
    return InvalidBatchError(
        f"{source}: not valid UTF-8 at line {line} column {column} (byte offset {offset}); save it as UTF-8"
    )


def _is_utf8_message(msg: str) -> bool:
    return "UTF-8" in msg or "utf-8" in msg or "surrogate" in msg


def json_error(source: str, msg: str, line: int, column: int, char: int, within: str = "") -> InvalidBatchError:
    """The refusal of a document orjson rejected (not for invalid UTF-8: :func:`utf8_error`).

    ``within`` says what ``char`` is counted from when it is not the document's
    start (``" of the line"`` for a line of a JSON Lines file).
    """
    if _is_utf8_message(msg):
        hint = (
            "a \\uD800-\\uDFFF escape must be one half of a valid pair: fix or remove it"
            if "surrogate" in msg
            else "save it as UTF-8"
        )
    elif "infinity" in msg:
        hint = "a number is too large for a 64-bit float: store it as a string"
    elif "recursion" in msg or "depth" in msg:
        hint = "the document is nested too deeply: flatten it"
    else:
        hint = "fix the JSON syntax"
    return InvalidBatchError(
        f"{source}: not valid JSON at line {line} column {column} (character {char}{within}): {msg}; {hint}"
    )


def shifted_json_error(
    source: str, exc: orjson.JSONDecodeError, local: TextPoint, origin: TextPoint
) -> InvalidBatchError:
    """:func:`json_error` for an error orjson found in a text holding a piece of a document.

    The piece starts at ``local`` in the text orjson parsed (after a wrapper such
    as ``RUN_PREFIX``) and at ``origin`` in the whole document; the error's line,
    column and character are moved to the whole document's (orjson counts
    characters, and a column from the last newline, as :mod:`json` does).
    """
    char = origin.char + exc.pos - local.char
    if exc.lineno == local.line:  # no newline of the piece before the error
        line, column = origin.line, char - origin.line_char + 1
    else:
        line, column = origin.line + exc.lineno - local.line, exc.colno
    return json_error(source, exc.msg, line, column, char)


def invalid_json(
    source: str, data: bytes, exc: orjson.JSONDecodeError, line: int | None = None, offset: int = 0
) -> InvalidBatchError:
    """The refusal of ``data``, which orjson rejected with ``exc``: a whole document, or (``line`` given)
    that line of a JSON Lines file (without its newline), whose first byte is at ``offset`` in the file;
    the character is then counted within the line, and the byte offset within the file.

    orjson checks the UTF-8 of the whole input before it parses, so invalid UTF-8
    anywhere is the refusal, at its first bad byte.
    """
    if _is_utf8_message(exc.msg):
        bad = utf8_error_offset(data)
        if bad is not None:
            origin = TextPoint() if line is None else TextPoint(byte=offset, line=line, line_byte=offset)
            return utf8_error(source, data, bad, 0, origin)
    if line is None:
        return json_error(source, exc.msg, exc.lineno, exc.colno, exc.pos)
    return json_error(source, exc.msg, line + exc.lineno - 1, exc.colno, exc.pos, " of the line")


def wrong_type_error(source: str, place: str, value: Any, fix: str) -> InvalidBatchError:
    """The refusal of a value of the wrong type: ``{source}: {place} is a string; {fix}``."""
    return InvalidBatchError(f"{source}: {place} is {_type_name(value)}; {fix}")


def check_articles(articles: Sequence[Any], source: str, first_index: int = 0) -> None:
    """Refuse the first article that is not an object (``first_index``: the index of ``articles[0]``)."""
    for i, article in enumerate(articles):
        if not isinstance(article, dict):
            raise wrong_type_error(source, f"$.articles[{first_index + i}]", article, _FIX_ARTICLE)


def parse_batch(data: bytes, source: str = "<input>") -> dict[str, Any]:
    """Parse and validate a batch document from its bytes.

    The checks, in this order (``selection_storage.refusal`` makes the same
    decisions run by run, with the functions above): the first bytes; invalid
    UTF-8 anywhere (orjson checks the UTF-8 of the whole input before it
    parses, so a bad byte anywhere beats an earlier syntax error); the first
    JSON error; the shape; the first article that is not an object; nesting
    (:func:`walk_values`' order); and, only for documents with a float or a
    key count that differs, the first exact problem in document order.

    Raises:
        InvalidBatchError: with a one-line message naming ``source``, the place
            and the fix, for anything that is not a valid batch.

    >>> parse_batch(b'{"articles": [], "run": 7}')
    {'articles': [], 'run': 7}
    """
    check_start(data, source)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise invalid_json(source, data, exc) from None
    if not isinstance(doc, dict):
        raise wrong_type_error(source, "the root", doc, _FIX_SHAPE)
    if "articles" not in doc:
        raise InvalidBatchError(f'{source}: the root object has no "articles" key; {_FIX_SHAPE}')
    articles = doc["articles"]
    if not isinstance(articles, list):
        raise wrong_type_error(source, "$.articles", articles, _FIX_SHAPE)
    check_articles(articles, source)
    check_values(data, top_values(doc.items()), len(doc), source)
    return doc


def count_keys(data: bytes | bytearray) -> int:
    """Number of object keys written in the JSON text (duplicates included).

    Fast path, an upper bound: where no '"' is preceded by a backslash right
    before a ':' and no key is followed by whitespace before its ':', every key
    ends in '":' (a quote inside a string is always escaped); a string that starts
    with ':' adds one more. So the count is at least the true number of keys,
    and equal to the members orjson kept only if there is no duplicate.
    Otherwise the strings are scanned one by one (exact).
    """
    if b'\\":' not in data and _KEY_SPACE_COLON.search(data) is None:
        return data.count(b'":')
    return sum(1 for m in _STRING_OR_KEY.finditer(data) if m.group(1))


def select_articles(
    articles: Sequence[Any], progress: ProgressCallback | None = None, every: int = 500
) -> list[Selection]:
    """Select for every article, in order. ``progress(done, total)`` is called
    every ``every`` articles and once at the end."""
    total = len(articles)
    out: list[Selection] = []
    for i, article in enumerate(articles):
        out.append(select_article(article, i))
        if progress is not None and (i + 1) % every == 0 and i + 1 != total:
            progress(i + 1, total)
    if progress is not None:
        progress(total, total)
    return out


def apply_selections(doc: dict[str, Any], selections: Sequence[Selection], start: int = 0) -> dict[str, Any]:
    """Write each decision into its article (mutates and returns ``doc``).

    An existing ``selected_extractor`` keeps its position; otherwise it is
    appended as the article's last key. ``start`` is the index in the whole
    batch of ``doc``'s first article, when ``doc`` holds one run of it.
    """
    articles = doc["articles"]
    if len(selections) != len(articles):
        raise ValueError(f"{len(selections)} selections for {len(articles)} articles")
    for sel in selections:
        articles[sel.index - start][SELECTED_KEY] = sel.selected
    return doc


def dump_batch(doc: dict[str, Any]) -> bytes:
    """Deterministic bytes: 2-space indentation, UTF-8 (not ASCII-escaped), final newline."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


_CHUNK = 1 << 20

#: What separates two articles in the written ``articles`` array.
ARTICLE_SEPARATOR = b",\n    "


def render_articles(articles: Iterable[dict[str, Any]]) -> bytes:
    r"""The bytes of consecutive articles as they appear inside a written batch, joined
    by :data:`ARTICLE_SEPARATOR` (runs rendered separately join the same way).

    >>> render_articles([{"a": 1}, {"b": [2]}])
    b'{\n      "a": 1\n    },\n    {\n      "b": [\n        2\n      ]\n    }'
    """
    return ARTICLE_SEPARATOR.join(_render_article(article) for article in articles)


def _render_article(article: Any) -> bytes:
    # orjson writes no raw newline inside a string, so every newline of its output
    # is structural and re-indenting is a plain replacement.
    return orjson.dumps(article, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")


def envelope_parts(doc: dict[str, Any], any_articles: bool) -> tuple[bytes, bytes]:
    """The bytes written before and after the articles of ``doc``.

    ``doc["articles"]`` itself is not read: a written batch is
    ``head + render_articles(articles) + tail``, and articles rendered in
    separate runs join with :data:`ARTICLE_SEPARATOR`, which is how a batch
    scored by several workers is put back together. ``any_articles`` says
    whether the array is not empty.

    >>> envelope_parts({"run": 7, "articles": []}, True)
    (b'{\\n  "run": 7,\\n  "articles": [\\n    ', b'\\n  ]\\n}\\n')
    """
    if not doc:
        return b"{}\n", b""
    head: list[bytes] = [b"{"]
    tail: list[bytes] = []
    part = head
    sep = b"\n  "
    for key, value in doc.items():
        part.append(sep)
        sep = b",\n  "
        part.append(orjson.dumps(key))
        part.append(b": ")
        if key == "articles" and part is head:
            if any_articles:
                head.append(b"[\n    ")
                tail.append(b"\n  ]")
            else:
                head.append(b"[]")
            part = tail
        else:
            part.append(orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  "))
    part.append(b"\n}\n")
    return b"".join(head), b"".join(tail)


def iter_dump_batch(doc: dict[str, Any]) -> Iterator[bytes]:
    """The bytes of ``dump_batch(doc)``, produced article by article.

    A streaming writer never holds a second copy of the whole document; the
    tests check that ``b"".join(iter_dump_batch(d)) == dump_batch(d)``.
    """
    articles = doc.get("articles")
    if not isinstance(articles, list):  # not a batch: nothing to stream
        yield dump_batch(doc)
        return
    head, tail = envelope_parts(doc, bool(articles))
    buf: list[bytes] = [head]
    size = 0
    sep = b""
    for article in articles:
        rendered = _render_article(article)
        buf.append(sep)
        buf.append(rendered)
        sep = ARTICLE_SEPARATOR
        size += len(rendered)
        if size >= _CHUNK:
            yield b"".join(buf)
            buf, size = [], 0
    buf.append(tail)
    yield b"".join(buf)


def select_batch_bytes(
    data: bytes, source: str = "<input>", progress: ProgressCallback | None = None
) -> tuple[bytes, list[Selection]]:
    """Parse, select and serialize in one call: the whole core, bytes to bytes."""
    doc = parse_batch(data, source)
    selections = select_articles(doc["articles"], progress)
    return dump_batch(apply_selections(doc, selections)), selections


@dataclass(frozen=True)
class Summary:
    """Counts over a batch's selections. Dicts list every extractor / reason /
    pool, zeros included, in a fixed order."""

    articles: int
    by_extractor: dict[str, int]
    by_reason: dict[str, int]
    by_pool: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "articles": self.articles,
            "by_extractor": dict(self.by_extractor),
            "by_reason": dict(self.by_reason),
            "by_pool": dict(self.by_pool),
        }


def merge_summaries(parts: Iterable[Summary]) -> Summary:
    """The summary of consecutive parts of a batch, from theirs.

    >>> merge_summaries([]) == summarize([])
    True
    """
    total = summarize(())
    n = 0
    for part in parts:
        n += part.articles
        for mine, theirs in (
            (total.by_extractor, part.by_extractor),
            (total.by_reason, part.by_reason),
            (total.by_pool, part.by_pool),
        ):
            for key, count in theirs.items():
                mine[key] += count
    return Summary(n, total.by_extractor, total.by_reason, total.by_pool)


def summarize(selections: Iterable[Selection]) -> Summary:
    by_extractor = dict.fromkeys(EXTRACTORS, 0)
    by_reason = dict.fromkeys((r.value for r in Reason), 0)
    by_pool = dict.fromkeys((p.value for p in Pool), 0)
    n = 0
    for sel in selections:
        n += 1
        by_extractor[sel.selected] += 1
        by_reason[sel.reason.value] += 1
        by_pool[sel.pool.value] += 1
    return Summary(n, by_extractor, by_reason, by_pool)
