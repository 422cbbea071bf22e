"""A batch cut into chunks of consecutive articles (or pages), scored or extracted one chunk per task run."""

from __future__ import annotations


def chunk_bounds(n_articles: int, chunk_size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk, in order; the last one may be shorter.

    >>> chunk_bounds(7, 3)
    [(0, 3), (3, 6), (6, 7)]
    >>> chunk_bounds(0, 3)
    []
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    return [(start, min(start + chunk_size, n_articles)) for start in range(0, n_articles, chunk_size)]
