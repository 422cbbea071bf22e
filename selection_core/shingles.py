"""Shingling: the set of distinct k-token windows of a token sequence."""

from __future__ import annotations

from collections.abc import Sequence

from .config import SHINGLE_SIZE

Shingle = tuple[str, ...]


def shingles(tokens: Sequence[str], size: int = SHINGLE_SIZE) -> frozenset[Shingle]:
    """Return the distinct ``size``-token windows of ``tokens``.

    A sequence shorter than ``size`` (but not empty) is one shingle of all its
    tokens; an empty sequence has no shingles.

    >>> sorted(shingles(["a", "b", "c"]))
    [('a', 'b', 'c')]
    >>> len(shingles(["a", "b", "c", "d", "e", "a", "b", "c", "d", "e"]))
    5
    """
    if size < 1:
        raise ValueError(f"shingle size must be at least 1, got {size}")
    n = len(tokens)
    if n == 0:
        return frozenset()
    if n < size:
        return frozenset((tuple(tokens),))
    # zip over shifted views builds every window in C; only set membership and
    # sizes are used afterwards, so set order never matters.
    return frozenset(zip(*(tokens[i : n - size + 1 + i] for i in range(size))))
