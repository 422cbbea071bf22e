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


def _walk(doc: dict[str, Any], source: str) -> tuple[int, bool]:
    """Count object members, and tell whether the document holds any float.

    A float may be an integer beyond 64 bits that orjson silently converted, or
    a literal that a double cannot hold exactly (``1e-400``, 25 digits): those
    documents get the exact check. Also refuses nesting deeper than orjson can
    write back (``MAX_DEPTH``). Iterative, so that deeply nested input cannot
    exhaust the Python stack.
    """
    stack: list[tuple[Any, int, str]] = []
    for key, value in doc.items():
        if key == "articles" and isinstance(value, list):
            stack.extend((v, ARTICLE_DEPTH, f"$.articles[{i}]") for i, v in enumerate(value))
        else:
            stack.append((value, 2, path_text([key])))
    return walk_nodes(stack, len(doc), source)


def walk_nodes(stack: list[tuple[Any, int, str]], members: int, source: str) -> tuple[int, bool]:
    """:func:`_walk` from ``(value, depth, place)`` entries: ``members`` plus the members of every object
    below, and whether any float is there; refuses, naming the entry's place, a value nested deeper than
    :data:`MAX_DEPTH` (``stack`` is consumed)."""
    has_float = False
    while stack:
        node, depth, place = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                break
            members += len(node)
            stack.extend((v, depth + 1, place) for v in node.values() if isinstance(v, (dict, list, float)))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                break
            stack.extend((v, depth + 1, place) for v in node if isinstance(v, (dict, list, float)))
        elif isinstance(node, float):
            has_float = True
    else:
        return members, has_float
    raise InvalidBatchError(
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


def find_exact_problem(data: bytes, source: str) -> None:
    """Slow path, only for suspicious documents: re-parse exactly and explain.

    The standard library parser keeps every key, integers of any size and the
    text of every float literal. Its recursion follows the interpreter's limit,
    which is raised for the call to cover orjson's own nesting limit (1024).
    """
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * 1024 + 200))
    try:
        exact = json.loads(data, object_pairs_hook=_pairs_hook, parse_float=_exact_float)
    except RecursionError:
        raise InvalidBatchError(f"{source}: nested too deeply to check exactly; flatten the document") from None
    finally:
        sys.setrecursionlimit(limit)
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(exact, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _DupDict):
            raise InvalidBatchError(
                f"{source}: {path_text(path)} has the key {json.dumps(node.duplicate, ensure_ascii=False)} "
                "more than once, so one of its values would be lost; remove or rename the duplicate"
            )
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(node))))
        elif isinstance(node, _InexactNumber):
            shown = node if len(node) <= 40 else node[:37] + "..."
            raise InvalidBatchError(
                f"{source}: {path_text(path)} is the number {shown}, which a 64-bit float cannot hold "
                f"exactly (it would be written as {float(node)!r}); store it as a string"
            )
        elif isinstance(node, int) and not isinstance(node, bool) and not _INT64_MIN <= node <= _UINT64_MAX:
            raise InvalidBatchError(
                f"{source}: {path_text(path)} is an integer beyond 64 bits ({str(node)[:30]}...), which "
                "cannot be kept exactly; store it as a string"
            )


def _utf8_error_offset(data: bytes) -> int | None:
    """Byte offset of the first invalid UTF-8 sequence, or None if the bytes are UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def check_file_start(data: bytes, source: str) -> None:
    """Refuse a file that starts with a UTF-8 byte-order mark or looks like UTF-16 (``data``: its first bytes)."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvalidBatchError(f"{source}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) >= 2 and (data[0] == 0 or data[1] == 0)):
        raise InvalidBatchError(f"{source}: looks like UTF-16, not UTF-8; convert it to UTF-8")


def invalid_json(
    data: bytes, exc: orjson.JSONDecodeError, source: str, line: int | None = None, offset: int = 0
) -> InvalidBatchError:
    """The error for text that orjson refused: a whole document, or (``line`` given) that line of a
    JSON Lines file, whose first byte is at ``offset`` in the file; the character is then counted
    within the line, and the byte offset within the file."""
    first_line, within = (1, "") if line is None else (line, " of the line")
    if "UTF-8" in exc.msg or "utf-8" in exc.msg or "surrogate" in exc.msg:
        bad = _utf8_error_offset(data)
        if bad is not None:
            at_line = first_line + data.count(b"\n", 0, bad)
            column = bad - (data.rfind(b"\n", 0, bad) + 1) + 1
            return InvalidBatchError(
                f"{source}: not valid UTF-8 at line {at_line} column {column} (byte offset {offset + bad}); "
                "save it as UTF-8"
            )
        hint = (
            "a \\uD800-\\uDFFF escape must be one half of a valid pair: fix or remove it"
            if "surrogate" in exc.msg
            else "save it as UTF-8"
        )
    elif "infinity" in exc.msg:
        hint = "a number is too large for a 64-bit float: store it as a string"
    elif "recursion" in exc.msg or "depth" in exc.msg:
        hint = "the document is nested too deeply: flatten it"
    else:
        hint = "fix the JSON syntax"
    return InvalidBatchError(
        f"{source}: not valid JSON at line {first_line + exc.lineno - 1} column {exc.colno} "
        f"(character {exc.pos}{within}): {exc.msg}; {hint}"
    )


def not_an_object(source: str, place: str, value: Any, fix: str) -> InvalidBatchError:
    """The error for an article that is not an object: ``{source}: {place} is a string; {fix}``."""
    return InvalidBatchError(f"{source}: {place} is {_type_name(value)}; {fix}")


def parse_batch(data: bytes, source: str = "<input>") -> dict[str, Any]:
    """Parse and validate a batch document from its bytes.

    Raises:
        InvalidBatchError: with a one-line message naming ``source``, the place
            and the fix, for anything that is not a valid batch.

    >>> parse_batch(b'{"articles": [], "run": 7}')
    {'articles': [], 'run': 7}
    """
    if not data:
        raise InvalidBatchError(f"{source}: the file is empty (0 bytes); {_FIX_SHAPE}")
    check_file_start(data, source)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise invalid_json(data, exc, source) from None
    if not isinstance(doc, dict):
        raise InvalidBatchError(f"{source}: the root is {_type_name(doc)}; {_FIX_SHAPE}")
    if "articles" not in doc:
        raise InvalidBatchError(f'{source}: the root object has no "articles" key; {_FIX_SHAPE}')
    articles = doc["articles"]
    if not isinstance(articles, list):
        raise InvalidBatchError(f"{source}: $.articles is {_type_name(articles)}; {_FIX_SHAPE}")
    for i, article in enumerate(articles):
        if not isinstance(article, dict):
            raise not_an_object(source, f"$.articles[{i}]", article, "every article must be a JSON object")
    members, has_float = _walk(doc, source)
    if has_float or count_keys(data) != members:
        find_exact_problem(data, source)
    return doc


def count_keys(data: bytes) -> int:
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
