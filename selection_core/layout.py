"""Where the articles of a batch lie: one streaming scanner that delimits them, without parsing, into chunks.

It keeps one chunk record, the value being delimited and the envelope, never the batch; whether a
chunk is valid JSON is decided when it is parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import orjson

from .errors import InvalidBatchError

#: Bytes a chunk of a JSON batch is wrapped in, so that it parses as a batch of its own.
CHUNK_PREFIX: Final[bytes] = b'{"articles":['
CHUNK_SUFFIX: Final[bytes] = b"]}"

#: Bytes read at a time.
READ_SIZE: Final[int] = 8 << 20

#: Reads up to ``n`` more bytes; ``b""`` at the end.
Reader = Callable[[int], bytes]

#: The fix a refusal of a batch's shape names.
FIX_SHAPE: Final[str] = 'expected {"articles": [ {...}, ... ]}'
_FIX_SYNTAX: Final[str] = "fix the JSON syntax"
_WS_BYTES: Final[bytes] = b" \t\n\r"
_WS = re.compile(rb"[ \t\n\r]*+")
# The patterns below run on bytes whose escaped backslashes are blanked (:func:`_blank_escapes`), so that a
# '"' preceded by a backslash is escaped and any other '"' opens or closes a string. From inside an array or
# object: skip everything but brackets, strings whole, and stop after the next bracket. Anchored (``match``):
# a '"' that starts no complete string makes it fail.
_STRING_PATTERN = rb'"[^"]*+(?:(?<=\\)"[^"]*+)*+"'
_TO_BRACKET = re.compile(rb'[^"\[\]{}]*+(?:' + _STRING_PATTERN + rb'[^"\[\]{}]*+)*+([\[\]{}])')
_STRING = re.compile(_STRING_PATTERN)
_ESCAPED_BACKSLASH = re.compile(rb"\\\\")
_LITERAL = re.compile(rb'[^ \t\n\r,}\]"{\[:]*+')
_CLOSERS = {ord("{"): ord("}"), ord("["): ord("]")}
_MAX_NESTING = 4096
_KINDS = {ord("{"): "an object", ord("["): "an array", ord('"'): "a string", ord("t"): "a boolean"}
_KINDS.update({ord("f"): "a boolean", ord("n"): "null", ord("-"): "a number"})
_KINDS.update((c, "a number") for c in b"0123456789")


def _blank_escapes(data: bytes | bytearray | memoryview) -> bytes:
    r"""``data``, which starts outside a string, with each escaped backslash (``\\``) made ``__``: the same
    length, and a '"' ends a string unless a backslash precedes it."""
    data = bytes(data)
    # Searching first is cheaper than replacing: most batches have no escaped backslash at all.
    return data.replace(b"\\\\", b"__") if _ESCAPED_BACKSLASH.search(data) else data


def _value_end(data: bytes, pos: int) -> int:
    """The offset just after the JSON value starting at ``data[pos]`` (escapes blanked), or -1 (-2: nested too
    deeply to delimit)."""
    n = len(data)
    if not 0 <= pos < n:
        return -1
    first = data[pos]
    if first == 0x22:  # '"'
        m = _STRING.match(data, pos)
        return -1 if m is None else m.end()
    if first in _CLOSERS:
        expected = [_CLOSERS[first]]
        p = pos + 1
        match = _TO_BRACKET.match
        while expected:
            m = match(data, p)
            if m is None:
                return -1
            p = m.end()
            bracket = data[p - 1]
            if bracket in _CLOSERS:
                if len(expected) == _MAX_NESTING:
                    return -2
                expected.append(_CLOSERS[bracket])
            elif expected.pop() != bracket:
                return -1
        return p
    if first in b",:}]":
        return -1
    m = _LITERAL.match(data, pos)
    return m.end() if m is not None else -1


def array_spans(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, list[int], list[int]] | None:
    r"""For the array whose ``[`` is at ``data[pos]``: the offset of its ``]`` and each element's span.

    >>> array_spans(b'[ {"a": 1} , [2] ]', 0)
    (17, [2, 13], [10, 16])
    >>> array_spans(b'[{"a": ["]\\\\", "\\"]"]}, 1]', 0)
    (25, [1, 24], [22, 25])
    >>> array_spans(b'[1 2]', 0) is None
    True
    >>> array_spans(b'["open]', 0) is None
    True
    """
    data = _blank_escapes(data)
    n = len(data)
    if not 0 <= pos < n or data[pos] != 0x5B:  # '['
        return None
    starts: list[int] = []
    ends: list[int] = []
    p = _WS.match(data, pos + 1).end()  # type: ignore[union-attr]
    if p < n and data[p] == 0x5D:  # ']'
        return p, starts, ends
    while True:
        end = _value_end(data, p)
        if end < 0:
            return None
        starts.append(p)
        ends.append(end)
        p = _WS.match(data, end).end()  # type: ignore[union-attr]
        if p < n and data[p] == 0x2C:  # ','
            p = _WS.match(data, p + 1).end()  # type: ignore[union-attr]
            continue
        if p < n and data[p] == 0x5D:
            return p, starts, ends
        return None


@dataclass(frozen=True)
class Chunk:
    """Articles ``start .. stop - 1`` of a batch, in bytes ``begin .. end`` of its file (end exclusive)."""

    start: int
    stop: int
    begin: int
    end: int

    def __len__(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class Layout:
    """A batch's chunks, in order, and its envelope: the root with an empty ``articles`` array (JSON only)."""

    chunks: tuple[Chunk, ...]
    envelope: bytes = b""
    open: int = -1  # the offsets of the articles array's '[' and ']' (JSON only)
    close: int = -1

    @property
    def articles(self) -> int:
        return self.chunks[-1].stop if self.chunks else 0


class _Refused(Exception):
    """The scan cannot go on: ``message`` says where and why (``source`` is added by the caller)."""


class _Window:
    """The bytes from ``base`` on, read ``READ_SIZE`` at a time; a refill drops what lies before ``keep``."""

    def __init__(self, read: Reader, size: int) -> None:
        self._read = read
        self._size = size
        self.buf = b""
        self._blanked: bytes | None = None  # buf with its escapes blanked, made when needed
        self.base = 0
        self.eof = False

    def refill(self, keep: int) -> bool:
        if self.eof:
            return False
        # Read at least as much as is pending, so that a value of any size costs a number of
        # refills logarithmic in its size: the work stays linear in the file's size.
        data = self._read(max(self._size, self.base + len(self.buf) - keep))
        if not data:
            self.eof = True
            return False
        drop = keep - self.base
        self.buf = self.buf[drop:] + data if drop > 0 else self.buf + data
        self._blanked = None
        self.base = keep if drop > 0 else self.base
        return True

    def byte(self, pos: int, keep: int) -> int:
        """The byte at ``pos``, or -1 past the end."""
        while pos - self.base >= len(self.buf):
            if not self.refill(keep):
                return -1
        return self.buf[pos - self.base]

    def skip_ws(self, pos: int, keep: int) -> int:
        while True:
            rel = pos - self.base
            buf = self.buf
            n = len(buf)
            while rel < n and buf[rel] in _WS_BYTES:
                rel += 1
            pos = self.base + rel
            if rel < n or not self.refill(keep):
                return pos

    def value_end(self, pos: int, keep: int, what: str) -> int:
        while True:
            rel = pos - self.base
            if self._blanked is None:  # buf starts outside a string: at an article, the file's start or a ']'
                self._blanked = _blank_escapes(self.buf)
            end = _value_end(self._blanked, rel) if rel < len(self.buf) else -1
            if end == -2:
                raise _Refused(
                    f"{what}, from byte offset {pos}, is nested more than {_MAX_NESTING} levels deep; flatten it"
                )
            # A value that reaches the end of what was read may go on in the next read.
            if 0 <= end < len(self.buf) or (end >= 0 and self.eof):
                return self.base + end
            if not self.refill(keep):
                if end >= 0:
                    return self.base + end
                raise _Refused(
                    f"{what}, from byte offset {pos}, never ends: a string or a bracket is not closed, "
                    f"or the file is cut short; {_FIX_SYNTAX}"
                )

    def between(self, start: int, stop: int) -> bytes:
        return self.buf[start - self.base : stop - self.base]


class _Cutter:
    """Groups consecutive articles into chunks of at most ``max_bytes`` bytes and ``max_articles`` articles."""

    def __init__(self, max_bytes: int, max_articles: int | None) -> None:
        if max_bytes < 1 or (max_articles is not None and max_articles < 1):
            raise ValueError("chunks must allow at least one byte and one article")
        self._max_bytes = max_bytes
        self._max_articles = max_articles
        self.chunks: list[Chunk] = []
        self.count = 0
        self._start = 0
        self._begin = -1
        self._end = -1

    def add(self, begin: int, end: int) -> None:
        if self._begin >= 0 and (
            end - self._begin > self._max_bytes
            or (self._max_articles is not None and self.count - self._start >= self._max_articles)
        ):
            self.close()
        if self._begin < 0:
            self._start, self._begin = self.count, begin
        self._end = end
        self.count += 1

    def close(self) -> tuple[Chunk, ...]:
        if self._begin >= 0:
            self.chunks.append(Chunk(self._start, self.count, self._begin, self._end))
            self._begin = -1
        return tuple(self.chunks)


def check_start(data: bytes | bytearray, source: str) -> None:
    """Refuse a batch by its first bytes (any 3 or more decide): empty, a byte-order mark, UTF-16."""
    if not data:
        raise InvalidBatchError(f"{source}: the file is empty (0 bytes); {FIX_SHAPE}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvalidBatchError(f"{source}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) >= 2 and (data[0] == 0 or data[1] == 0)):
        raise InvalidBatchError(f"{source}: looks like UTF-16, not UTF-8; convert it to UTF-8")


def _expect(w: _Window, p: int, keep: int, wanted: bytes, what: str) -> int:
    """The byte at ``p`` if it is one of ``wanted``, else refuse (``what``: where it was expected)."""
    c = w.byte(p, keep)
    if c < 0 or c not in wanted:
        raise _unexpected(c, p, " or ".join(repr(chr(b)) for b in wanted) + f" {what}")
    return c


def _unexpected(c: int, p: int, expected: str) -> _Refused:
    """The refusal of the byte ``c`` (-1: the file's end) at offset ``p``, where ``expected`` should be."""
    found = "the file ends" if c < 0 else f"found {chr(c)!r}"
    return _Refused(f"expected {expected} at byte offset {p}, {found}; {_FIX_SYNTAX}")


def _key(w: _Window, p: int, keep: int) -> tuple[bytes, int]:
    """The root key at ``p`` (its text, when spelled with escapes) and the offset after it."""
    if w.byte(p, keep) != 0x22:
        raise _Refused(f"expected a key (a string) of the root object at byte offset {p}; {_FIX_SYNTAX}")
    end = w.value_end(p, keep, "a key of the root object")
    key = w.between(p, end)
    if b"\\" in key:  # spelled with escapes: what it says decides
        try:
            key = b'"articles"' if json.loads(key) == "articles" else b'"other"'
        except ValueError:
            raise _Refused(f"the key at byte offset {p} is not a valid JSON string; {_FIX_SYNTAX}") from None
    return key, end


def _articles(w: _Window, pos: int, cutter: _Cutter) -> int:
    """Delimit the articles of the array whose ``[`` is at ``pos``; the offset of its ``]``."""
    p = w.skip_ws(pos + 1, pos)
    if w.byte(p, pos) == 0x5D:  # ']'
        return p
    while True:
        c = w.byte(p, p)
        if c < 0 or c in b",:]}":
            raise _unexpected(c, p, f"$.articles[{cutter.count}]")
        end = w.value_end(p, p, f"$.articles[{cutter.count}]")
        cutter.add(p, end)
        p = w.skip_ws(end, end)
        if _expect(w, p, p, b",]", f"after $.articles[{cutter.count - 1}]") == 0x5D:
            return p
        p = w.skip_ws(p + 1, p + 1)


def _check_scalar_root(w: _Window, p: int) -> None:
    """Refuse as not valid JSON, where parsing stops, a file that is not one scalar at ``p`` (then whitespace)."""
    end = w.value_end(p, 0, "the root value")
    after = w.skip_ws(end, 0)
    text = w.between(p, after + 1)  # the value, the whitespace after it and the next byte, if any
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        at = p + len(str(text, "utf-8", "surrogateescape")[: exc.pos].encode("utf-8", "surrogateescape"))
        raise _Refused(f"not valid JSON at byte offset {at}: {exc.msg}; {FIX_SHAPE}") from None


def _scan_root(w: _Window, cutter: _Cutter) -> Layout:
    p = w.skip_ws(0, 0)
    c = w.byte(p, 0)
    if c != 0x7B:  # '{'
        if c < 0:
            raise _Refused(f"the file holds only whitespace; {FIX_SHAPE}")
        if c not in _KINDS:
            raise _Refused(f"not valid JSON at byte offset {p} (it starts with {chr(c)!r}); {FIX_SHAPE}")
        if c != 0x5B:  # '[': a scalar, or plain text that starts like one ("true story", "nothing")
            _check_scalar_root(w, p)
        raise _Refused(f"the root is {_KINDS[c]} (byte offset {p}), not an object; {FIX_SHAPE}")
    p = w.skip_ws(p + 1, 0)
    head = b""
    opened = closed = -1
    keep = 0  # the envelope is kept: the bytes before the array, then from its ']' on
    if w.byte(p, keep) != 0x7D:  # '}': an empty root
        while True:
            key_at = p
            key, p = _key(w, p, keep)
            p = w.skip_ws(p, keep)
            _expect(w, p, keep, b":", "after the key")
            p = w.skip_ws(p + 1, keep)
            if key == b'"articles"':
                if opened >= 0:
                    raise _Refused(
                        f'the root object has the key "articles" more than once (again at byte offset {key_at}), '
                        "so one of its values would be lost; remove or rename the duplicate"
                    )
                c = w.byte(p, keep)
                if c != 0x5B:  # '['
                    kind = "missing" if c < 0 else f"{_KINDS.get(c, 'not a JSON value')} (byte offset {p})"
                    raise _Refused(f"$.articles is {kind}, not an array; {FIX_SHAPE}")
                opened = p
                head = w.between(0, p + 1)
                closed = _articles(w, p, cutter)
                keep = closed
                p = closed + 1
            else:
                c = w.byte(p, keep)
                if c < 0 or c in b",:]}":
                    raise _unexpected(c, p, "a value")
                p = w.value_end(p, keep, "a value of the root object")
            p = w.skip_ws(p, keep)
            if _expect(w, p, keep, b",}", "in the root object") == 0x7D:
                break
            p = w.skip_ws(p + 1, keep)
    end = w.skip_ws(p + 1, keep)
    if w.byte(end, keep) >= 0:
        raise _Refused(f"there is more after the root object, at byte offset {end}; remove it")
    if opened < 0:
        raise _Refused(f'the root object has no "articles" key; {FIX_SHAPE}')
    return Layout(cutter.close(), head + w.between(closed, end), opened, closed)


def _scan_lines(w: _Window, cutter: _Cutter) -> Layout:
    """Delimit the lines of a JSON Lines file (each with its newline; the last one may have none)."""
    pos = 0
    while True:
        nl = w.buf.find(b"\n", pos - w.base)
        if nl >= 0:
            end = w.base + nl + 1
            cutter.add(pos, end)
            pos = end
        elif not w.refill(pos):
            if pos < w.base + len(w.buf):
                cutter.add(pos, w.base + len(w.buf))
            return Layout(cutter.close())


def scan(
    read: Reader,
    source: str,
    max_bytes: int,
    max_articles: int | None = None,
    lines: bool = False,
    read_size: int = READ_SIZE,
) -> Layout:
    """Delimit the articles of a batch (JSON Lines with ``lines``) read through ``read``, into chunks
    of at most ``max_bytes`` bytes (or one larger article) and ``max_articles`` articles.

    Raises:
        InvalidBatchError: the articles cannot be delimited, with the place and the fix.

    >>> import io
    >>> scan(io.BytesIO(b'{"run": 7, "articles": [{"a": 1}, {}]}').read, "b.json", 8)
    Layout(chunks=(Chunk(start=0, stop=1, begin=24, end=32), Chunk(start=1, stop=2, begin=34, end=36)), \
envelope=b'{"run": 7, "articles": []}', open=23, close=36)
    """
    cutter = _Cutter(max_bytes, max_articles)
    w = _Window(lambda n: read(n) or b"", read_size)
    w.refill(0)
    if not lines or w.buf:
        check_start(w.buf[:3], source)
    try:
        return _scan_lines(w, cutter) if lines else _scan_root(w, cutter)
    except _Refused as refused:
        raise InvalidBatchError(f"{source}: {refused}") from None
