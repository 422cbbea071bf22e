"""Where each article of a batch lies in its bytes, so that workers can read their own.

A batch is cut into runs of consecutive whole articles without parsing it:
:func:`scan_layout` finds the byte span of every element of the root object's
``articles`` array. Each run is then parsed and validated in full by
:func:`selection_core.batch.parse_batch`, wrapped as ``{"articles":[ ... ]}`` so
that every depth and every check is the one the whole document would get
(:data:`RUN_PREFIX` + run + :data:`RUN_SUFFIX`; ``selection_storage.chunks.score_chunk`` reads it
so, in one copy), and the rest of the document (the *envelope*: the root
with an empty ``articles`` array, :func:`envelope_bytes`) is validated the same
way. The runs joined with commas and put back into the envelope are the input
bytes themselves, so when every piece is valid, the whole document is valid,
and its articles are the runs' articles in order.

The scan only delimits values (see ``_layout.c``): it never decides what is
valid. Where it cannot delimit the array (an unterminated string, unbalanced
brackets, no ``articles`` array at all) it returns
None and the caller parses the whole document instead, which gives the same
one-line error as before for every invalid input.

``_layout.c`` is the compiled form of :func:`value_end` and :func:`array_spans`,
used when it was built (as for the selection kernel, a C compiler is optional);
the pure functions here are the reference, and ``tests/core/test_layout.py`` checks
that the two agree.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Final

#: Bytes a run of articles is wrapped in before it is parsed, so that it is validated as a batch of its own.
RUN_PREFIX: Final[bytes] = b'{"articles":['
RUN_SUFFIX: Final[bytes] = b"]}"

#: Why a batch is read and scored in one piece, as a run's log and summary say it.
ONE_PIECE_REASON: Final[str] = (
    "its articles could not be delimited without parsing the whole document, so it was read and scored in one piece"
)

_WS = re.compile(rb"[ \t\n\r]*+")
# From inside an array or object: skip everything but brackets, strings whole,
# and stop after the next bracket. Anchored (``match``), so a '"' that starts no
# complete string makes it fail instead of resuming inside the string.
_TO_BRACKET = re.compile(rb'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+([\[\]{}])', re.DOTALL)
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_LITERAL = re.compile(rb'[^ \t\n\r,}\]"{\[:]*+')
_CLOSERS = {ord("{"): ord("}"), ord("["): ord("]")}
_MAX_NESTING = 4096


def _load() -> ModuleType | None:
    try:
        from . import _layout  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _layout


#: The compiled scanner, or None when it was not built.
COMPILED: ModuleType | None = _load()


def py_value_end(data: bytes | memoryview, pos: int) -> int:
    """The offset just after the JSON value starting at ``data[pos]``, or -1.

    >>> py_value_end(b'{"a": [1, "]"]} tail', 0)
    15
    >>> py_value_end(b'"open', 0)
    -1
    """
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
                    return -1
                expected.append(_CLOSERS[bracket])
            elif expected.pop() != bracket:
                return -1
        return p
    if first in b",:}]":
        return -1
    m = _LITERAL.match(data, pos)
    return m.end() if m is not None else -1


def py_array_spans(data: bytes | memoryview, pos: int) -> tuple[int, list[int], list[int]] | None:
    """For the array whose ``[`` is at ``data[pos]``: its ``]`` offset and each element's span.

    >>> py_array_spans(b'[ {"a": 1} , [2] ]', 0)
    (17, [2, 13], [10, 16])
    >>> py_array_spans(b'[1 2]', 0) is None
    True
    """
    n = len(data)
    if not 0 <= pos < n or data[pos] != 0x5B:  # '['
        return None
    starts: list[int] = []
    ends: list[int] = []
    p = _WS.match(data, pos + 1).end()  # type: ignore[union-attr]
    if p < n and data[p] == 0x5D:  # ']'
        return p, starts, ends
    while True:
        end = py_value_end(data, p)
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


def value_end(data: bytes | memoryview, pos: int) -> int:
    """:func:`py_value_end`, compiled when the extension was built."""
    return COMPILED.value_end(data, pos) if COMPILED is not None else py_value_end(data, pos)


def array_spans(data: bytes | memoryview, pos: int) -> tuple[int, list[int], list[int]] | None:
    """:func:`py_array_spans`, compiled when the extension was built."""
    return COMPILED.array_spans(data, pos) if COMPILED is not None else py_array_spans(data, pos)


@dataclass(frozen=True)
class BatchLayout:
    """Where the ``articles`` array of a batch and each of its articles lie (byte offsets).

    ``open``/``close`` are the offsets of the array's ``[`` and ``]``;
    ``starts[i]``/``ends[i]`` delimit article ``i``.
    """

    open: int
    close: int
    starts: Sequence[int]
    ends: Sequence[int]

    @property
    def articles(self) -> int:
        return len(self.starts)

    def run_span(self, start: int, stop: int) -> tuple[int, int]:
        """Byte span of articles ``start .. stop - 1`` (with the commas between them)."""
        if not 0 <= start < stop <= len(self.starts):
            raise ValueError(f"no articles {start}..{stop - 1} in a batch of {len(self.starts)}")
        return self.starts[start], self.ends[stop - 1]


@dataclass(frozen=True)
class Run:
    """Articles ``start .. stop - 1`` of a batch, lying in bytes ``begin .. end`` of its file.

    ``begin`` is the first byte of article ``start``, ``end`` the byte just after
    article ``stop - 1``; the separators between the run's articles lie inside.
    Wrapped as :data:`RUN_PREFIX` + bytes + :data:`RUN_SUFFIX`, a run parses as a
    batch of its own.
    """

    start: int
    stop: int
    begin: int
    end: int

    def __len__(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True)
class RunLayout:
    """A batch cut into runs of consecutive articles, without holding a span per article.

    ``open``/``close`` are the offsets of the ``articles`` array's ``[`` and ``]``;
    ``runs`` cover every article, in order (none when the array is empty). Between
    two runs lie only a comma and JSON whitespace, as between two articles.
    """

    open: int
    close: int
    runs: tuple[Run, ...]

    @property
    def articles(self) -> int:
        return self.runs[-1].stop if self.runs else 0


def runs_of(layout: BatchLayout, max_articles: int) -> RunLayout:
    """``layout`` cut into runs of at most ``max_articles`` articles (a plan that holds every span).

    >>> runs_of(scan_layout(b'{"articles": [{"a": 1}, {"b": 2}, {}]}'), 2).runs
    (Run(start=0, stop=2, begin=14, end=32), Run(start=2, stop=3, begin=34, end=36))
    """
    if max_articles < 1:
        raise ValueError(f"max_articles must be at least 1, got {max_articles}")
    n = layout.articles
    runs = tuple(
        Run(start, min(start + max_articles, n), layout.starts[start], layout.ends[min(start + max_articles, n) - 1])
        for start in range(0, n, max_articles)
    )
    return RunLayout(layout.open, layout.close, runs)


def scan_layout(data: bytes | memoryview) -> BatchLayout | None:
    """The layout of a batch's bytes, or None when it cannot be delimited exactly.

    None means "parse the whole document instead": the root is not an object,
    it has no ``articles`` key or more than one, ``articles`` is not an array,
    or the text is malformed.

    >>> scan_layout(b'{"run": {"x": "]"}, "articles": [{"a": 1}, {"b": [2]}]}\\n')
    BatchLayout(open=32, close=53, starts=[33, 43], ends=[41, 53])
    """
    n = len(data)
    p = _WS.match(data, 0).end()  # type: ignore[union-attr]
    if p >= n or data[p] != 0x7B:  # '{'
        return None
    p = _WS.match(data, p + 1).end()  # type: ignore[union-attr]
    found: BatchLayout | None = None
    if p < n and data[p] == 0x7D:  # '}': no articles key
        return None
    while True:
        if p >= n or data[p] != 0x22:
            return None
        key_end = value_end(data, p)
        if key_end < 0:
            return None
        key = bytes(data[p:key_end])
        if b"\\" in key:  # spelled with escapes: what it says decides
            try:
                key = b'"articles"' if json.loads(key) == "articles" else b'"other"'
            except ValueError:
                return None
        p = _WS.match(data, key_end).end()  # type: ignore[union-attr]
        if p >= n or data[p] != 0x3A:  # ':'
            return None
        p = _WS.match(data, p + 1).end()  # type: ignore[union-attr]
        if key == b'"articles"':
            spans = array_spans(data, p) if found is None else None
            if spans is None:
                return None
            close, starts, ends = spans
            found = BatchLayout(p, close, starts, ends)
            p = close + 1
        else:
            p = value_end(data, p)
            if p < 0:
                return None
        p = _WS.match(data, p).end()  # type: ignore[union-attr]
        if p < n and data[p] == 0x2C:
            p = _WS.match(data, p + 1).end()  # type: ignore[union-attr]
            continue
        if p < n and data[p] == 0x7D:
            break
        return None
    if _WS.match(data, p + 1).end() != n:  # type: ignore[union-attr]
        return None
    return found


def envelope_bytes(data: bytes | memoryview, layout: BatchLayout) -> bytes:
    """The document with an empty ``articles`` array: everything the runs do not hold.

    >>> data = b'{"articles": [{"a": 1}], "run": 7}'
    >>> envelope_bytes(data, scan_layout(data))
    b'{"articles": [], "run": 7}'
    """
    return bytes(data[: layout.open + 1]) + bytes(data[layout.close :])
