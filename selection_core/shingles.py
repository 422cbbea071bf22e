"""Shingling: the set of distinct k-token windows of a token sequence, each its tokens joined by spaces."""

from __future__ import annotations

from collections.abc import Sequence

from .config import SHINGLE_SIZE
from .normalize import fold_line, prepare, tokenize_line

Shingle = str

_EMPTY: frozenset[Shingle] = frozenset()


class LineCache:
    """Per-article memo: line -> (tokens, windows inside it); (previous line, line) -> the windows across
    the break (when the previous line has ``SHINGLE_SIZE - 1`` tokens or more); lines -> their set."""

    __slots__ = ("lines", "crossings", "unions")

    def __init__(self) -> None:
        self.lines: dict[str, tuple[list[str], frozenset[Shingle]]] = {}
        self.crossings: dict[tuple[str, str], frozenset[Shingle]] = {}
        self.unions: dict[tuple[str, ...], frozenset[Shingle]] = {}


def _windows(t: Sequence[str], size: int) -> frozenset[Shingle]:
    """Every full window of ``t`` (none if ``t`` is shorter than ``size``)."""
    n = len(t)
    if n < size:
        return _EMPTY
    # zip over shifted views of t runs in C
    return frozenset(map(" ".join, zip(*(t[i : n - size + 1 + i] for i in range(size)))))


def shingles(tokens: Sequence[str]) -> frozenset[Shingle]:
    """The distinct ``SHINGLE_SIZE``-token windows of ``tokens``; a shorter sequence, if not empty, is one shingle."""
    if 0 < len(tokens) < SHINGLE_SIZE:
        return frozenset((" ".join(tokens),))
    return _windows(tokens, SHINGLE_SIZE)


def text_shingles(text: str, cache: LineCache | None = None) -> tuple[int, frozenset[Shingle]]:
    """``(len(t), shingles(t))`` with ``t = tokenize(text)``, done line by line: the lines several texts share
    (pass one ``cache``) are done once."""
    if cache is None:
        cache = LineCache()
    lines, crossings = cache.lines, cache.crossings
    size = SHINGLE_SIZE
    keep = size - 1
    parts: list[frozenset[Shingle]] = []
    seq: list[str] = []  # the lines that have tokens
    tail: list[str] = []  # the last (size - 1) tokens seen so far
    prev_line = ""  # the previous non-empty line, if it alone filled `tail`
    total = 0
    for line in filter(None, prepare(text).split("\n")):  # empty lines have no tokens
        entry = lines.get(line)
        if entry is None:
            toks = tokenize_line(fold_line(line))
            entry = lines[line] = (toks, _windows(toks, size))
        toks, inner = entry
        if not toks:
            continue
        if tail:
            # The windows that start before the line break and end in this line.
            if prev_line:
                key = (prev_line, line)
                cross = crossings.get(key)
                if cross is None:
                    cross = crossings[key] = _windows(tail + toks[:keep], size)
            else:
                cross = _windows(tail + toks[:keep], size)
            parts.append(cross)
            tail = toks[-keep:] if len(toks) >= keep else (tail + toks)[-keep:]
        else:
            tail = toks[-keep:]
        prev_line = line if len(toks) >= keep else ""
        total += len(toks)
        parts.append(inner)
        seq.append(line)
    if total == 0:
        return 0, frozenset()
    if total < size:
        return total, frozenset((" ".join(tail),))
    if len(parts) == 1:
        return total, parts[0]
    lines_key = tuple(seq)
    found = cache.unions.get(lines_key)
    if found is None:
        found = cache.unions[lines_key] = frozenset().union(*parts)
    return total, found
