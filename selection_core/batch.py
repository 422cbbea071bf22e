"""Batch documents: validate bytes into a document, select, apply, serialize (the policy: docs/rule.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

import orjson

from .config import EXTRACTORS, SELECTED_KEY
from .errors import InvalidBatchError
from .layout import CHUNK_PREFIX, FIX_SHAPE, Chunk, array_spans, check_start
from .select import Pool, Reason, Selection, select_article

#: ``progress(done, total)``: how far a piece of work has come (pages, articles; ``total`` may be an estimate that
#: grows), the one progress callback of the project (a run's bar, an artifact, a WARC's beats to its coordinator).
ProgressCallback = Callable[[int, int], None]

# A JSON string, and the ':' that makes it a key; in valid JSON a left-to-right scan visits exactly the strings.
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
_FIX_ARTICLE = "every article must be a JSON object"


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
    """What :func:`walk_values` found; when ``too_deep`` (a place) is set, the counts are partial."""

    members: int
    has_float: bool
    too_deep: str | None


#: A value to walk: the value, its depth (the root counts as 1) and the place a message names.
WalkItem = tuple[Any, int, str]


def top_values(pairs: Iterable[tuple[str, Any]], first_index: int = 0) -> list[WalkItem]:
    """The root's values as :func:`walk_values` takes them, ``articles`` expanded (``first_index``: the first's)."""
    items: list[WalkItem] = []
    for key, value in pairs:
        if key == "articles" and isinstance(value, list):
            items.extend((v, ARTICLE_DEPTH, f"$.articles[{first_index + i}]") for i, v in enumerate(value))
        else:
            items.append((value, 2, path_text([key])))
    return items


def walk_values(items: list[WalkItem]) -> Walk:
    """Count object members below ``items`` (consumed), whether any float, and nesting too deep."""
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


class _InexactNumber(str):
    """A number literal that a 64-bit float would change (kept as its text)."""


def _exact_float(text: str) -> Any:
    """``parse_float`` hook: the float, or a marker when the float is not exact."""
    value = float(text)
    mantissa, _, _ = text.lower().partition("e")
    # At most 15 significant digits (DBL_DIG) in the normal range always round-trip.
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


def exact_tree(data: bytes | bytearray) -> Any:
    """The document parsed exactly: duplicate keys marked, big integers and inexact floats kept.

    The stdlib parser recurses: only a document at most :data:`MAX_DEPTH` deep may be given.
    """
    return json.loads(data, object_pairs_hook=_pairs_hook, parse_float=_exact_float)


#: A value of an exact tree and its path from the root.
ExactItem = tuple[Any, tuple[str | int, ...]]


def check_exact(items: Iterable[ExactItem], source: str) -> None:
    """Raise the first exact problem in ``items`` and below them, in document order."""
    stack: list[ExactItem] = list(items)
    stack.reverse()
    while stack:
        node, path = stack.pop()
        if isinstance(node, _DupDict):
            raise InvalidBatchError(
                f"{source}: {path_text(path)} has the key {json.dumps(node.duplicate, ensure_ascii=False)} "
                "more than once, so one of its values would be lost; remove or rename the duplicate"
            )
        if isinstance(node, _InexactNumber):
            shown = node if len(node) <= 40 else node[:37] + "..."
            raise InvalidBatchError(
                f"{source}: {path_text(path)} is the number {shown}, which a 64-bit float cannot hold "
                f"exactly (it would be written as {float(node)!r}); store it as a string"
            )
        if isinstance(node, int) and not isinstance(node, bool) and not _INT64_MIN <= node <= _UINT64_MAX:
            raise InvalidBatchError(
                f"{source}: {path_text(path)} is an integer beyond 64 bits ({str(node)[:30]}...), which "
                "cannot be kept exactly; store it as a string"
            )
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(node))))


def needs_close_look(data: bytes | bytearray, items: list[WalkItem], members: int) -> bool:
    """Whether ``data`` (values ``items``, consumed, and ``members`` members besides theirs) may be refused:
    too deep, a float (maybe a big integer or inexact), or a duplicate key."""
    walk = walk_values(items)
    return walk.too_deep is not None or walk.has_float or count_keys(data) != members + walk.members


def check_values(
    data: bytes | bytearray, items: list[WalkItem], members: int, source: str, path: tuple[str | int, ...] = ()
) -> None:
    """Refuse a parsed object (text ``data``) nested too deeply, then, where :func:`needs_close_look`, its first
    exact problem; ``items`` and ``members`` as there, ``path`` its path in messages."""
    walk = walk_values(items)
    if walk.too_deep is not None:
        raise InvalidBatchError(
            f"{source}: {walk.too_deep} is nested more than {MAX_DEPTH} levels deep, more than can be written back "
            "exactly; flatten that value"
        )
    if walk.has_float or count_keys(data) != members + walk.members:
        check_exact([(exact_tree(data), path)], source)


def invalid_json(
    source: str,
    data: bytes | bytearray,
    exc: orjson.JSONDecodeError,
    where: str = "",
    to_file: Callable[[int], int] = int,
    fix: str = "fix the JSON syntax",
) -> InvalidBatchError:
    """The refusal of ``data``, which orjson rejected with ``exc``; ``to_file`` maps an offset in ``data`` to the
    file's; ``fix`` ends a refusal of the syntax. Invalid UTF-8 anywhere is refused first (orjson checks it before
    it parses)."""
    msg = exc.msg
    if "UTF-8" in msg or "utf-8" in msg or "surrogate" in msg:
        try:
            str(data, "utf-8")
        except UnicodeDecodeError as bad:
            offset = to_file(bad.start)
            return InvalidBatchError(f"{source}: {where}not valid UTF-8 at byte offset {offset}; save it as UTF-8")
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
        hint = fix
    offset = to_file(len(str(data, "utf-8", "replace")[: exc.pos].encode()))  # orjson counts characters
    return InvalidBatchError(f"{source}: {where}not valid JSON at byte offset {offset}: {msg}; {hint}")


def wrong_type_error(source: str, place: str, value: Any, fix: str) -> InvalidBatchError:
    """``{source}: {place} is a string; {fix}``."""
    return InvalidBatchError(f"{source}: {place} is {_TYPE_NAMES.get(type(value), type(value).__name__)}; {fix}")


def parse_batch(
    data: bytes | bytearray, source: str = "<input>", to_file: Callable[[int], int] = int
) -> dict[str, Any]:
    """Parse and validate a batch document from its bytes (the first problem in the order of docs/rule.md).

    ``to_file`` maps a byte offset of ``data`` to the file's (``data`` may be a batch's envelope).

    Raises:
        InvalidBatchError: naming ``source``, the place and the fix, for anything that is not a valid batch.
    """
    check_start(data, source)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise invalid_json(source, data, exc, to_file=to_file) from None
    if not isinstance(doc, dict):
        raise wrong_type_error(source, "the root", doc, FIX_SHAPE)
    if "articles" not in doc:
        raise InvalidBatchError(f'{source}: the root object has no "articles" key; {FIX_SHAPE}')
    articles = doc["articles"]
    if not isinstance(articles, list):
        raise wrong_type_error(source, "$.articles", articles, FIX_SHAPE)
    for i, article in enumerate(articles):
        if not isinstance(article, dict):
            raise wrong_type_error(source, f"$.articles[{i}]", article, _FIX_ARTICLE)
    check_values(data, top_values(doc.items()), len(doc), source)
    return doc


def parse_chunk(data: bytes | bytearray, source: str, chunk: Chunk) -> list[dict[str, Any]]:
    """The validated articles of ``chunk`` of a JSON batch, from its bytes wrapped in ``CHUNK_PREFIX``/``SUFFIX``.

    Raises:
        InvalidBatchError: for the first invalid article: its index, the byte offset in the file, the fix.
    """
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and isinstance(articles := doc.get("articles"), list):
        if len(articles) == len(chunk) and all(type(a) is dict for a in articles):
            if not needs_close_look(data, top_values(doc.items(), chunk.start), 1):
                return articles
    # Something is wrong, or needs an exact look: article by article, to find and name it.
    spans = array_spans(data, len(CHUNK_PREFIX) - 1)
    if spans is None or len(spans[1]) != len(chunk):
        raise InvalidBatchError(f"{source}: articles {chunk.start}..{chunk.stop - 1} are not where they were found")
    shift = chunk.begin - len(CHUNK_PREFIX)
    return [
        parse_article(bytes(data[begin:end]), source, chunk.start + k, shift + begin)
        for k, (begin, end) in enumerate(zip(spans[1], spans[2]))
    ]


def parse_article(text: bytes, source: str, index: int, offset: int) -> dict[str, Any]:
    """Article ``index`` of a JSON batch, validated, from its text, which starts at byte ``offset`` of the file."""
    place = f"$.articles[{index}]"
    try:
        article = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise invalid_json(source, text, exc, f"{place} is ", lambda b: offset + b) from None
    if not isinstance(article, dict):
        raise wrong_type_error(source, place, article, _FIX_ARTICLE)
    check_values(text, [(article, ARTICLE_DEPTH, place)], 0, source, ("articles", index))
    return article


def count_keys(data: bytes | bytearray) -> int:
    """Number of object keys written in the JSON text (duplicates included), or more (never fewer)."""
    # Without '\\":' and whitespace before a key's ':', every key ends in '":' (a string may add one).
    if b'\\":' not in data and _KEY_SPACE_COLON.search(data) is None:
        return data.count(b'":')
    return sum(1 for m in _STRING_OR_KEY.finditer(data) if m.group(1))


def select_articles(articles: Sequence[Any]) -> list[Selection]:
    """Select for every article, in order."""
    return [select_article(article, i) for i, article in enumerate(articles)]


def apply_selections(doc: dict[str, Any], selections: Sequence[Selection], start: int = 0) -> dict[str, Any]:
    """Write each decision into its article (mutates and returns ``doc``; ``start``: its first article's index)."""
    articles = doc["articles"]
    if len(selections) != len(articles):
        raise ValueError(f"{len(selections)} selections for {len(articles)} articles")
    for sel in selections:
        articles[sel.index - start][SELECTED_KEY] = sel.selected
    return doc


def dump_batch(doc: dict[str, Any]) -> bytes:
    """Deterministic bytes: 2-space indentation, UTF-8 (not ASCII-escaped), final newline."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


#: What separates two articles in the written ``articles`` array.
ARTICLE_SEPARATOR = b",\n    "


def render_articles(articles: Iterable[dict[str, Any]]) -> bytes:
    """The bytes of consecutive articles inside a written batch (chunks join by :data:`ARTICLE_SEPARATOR`)."""
    # orjson writes no raw newline inside a string: every newline is structural, re-indented by a replacement.
    return ARTICLE_SEPARATOR.join(
        orjson.dumps(article, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ") for article in articles
    )


def envelope_parts(doc: dict[str, Any], any_articles: bool) -> tuple[bytes, bytes]:
    """The bytes before and after the articles of ``doc`` (not read; ``any_articles``: the array is not empty):
    a written batch is ``head + render_articles(...) + tail``."""
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


def select_batch_bytes(data: bytes, source: str = "<input>") -> tuple[bytes, list[Selection]]:
    """Parse, select and serialize in one call: the whole core, bytes to bytes."""
    doc = parse_batch(data, source)
    selections = select_articles(doc["articles"])
    return dump_batch(apply_selections(doc, selections)), selections


@dataclass(frozen=True)
class Summary:
    """Counts over a batch's selections: every extractor, reason and pool, zeros included, in a fixed order."""

    articles: int
    by_extractor: dict[str, int]
    by_reason: dict[str, int]
    by_pool: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def merge_summaries(chunks: Iterable[Summary]) -> Summary:
    """The summary of a batch, from those of its consecutive chunks."""
    total = summarize(())
    n = 0
    for chunk in chunks:
        n += chunk.articles
        for mine, theirs in (
            (total.by_extractor, chunk.by_extractor),
            (total.by_reason, chunk.by_reason),
            (total.by_pool, chunk.by_pool),
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
