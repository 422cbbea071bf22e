"""Chunked selection: a batch split into runs of consecutive articles, each scored by one task run.

The selection rule is per article and deterministic, so scoring a batch chunk by
chunk, in any order and on any worker, gives the same selections as scoring it
whole, as long as every article keeps its global index. The flow concatenates
the chunks' selections in chunk order.

What travels to a worker is as small as it can be:

* only the article's *selection view* (:func:`selection_core.selection_view`): the three text
  fields and whether each block reports an error, never the user's other data;
* wrapped in an :class:`ArticleChunk`, which neither Prefect nor Dask walks
  into: Prefect looks for futures only inside lists, dicts, dataclasses and
  models, and Dask names the task by the chunk's position instead of hashing
  every string (with ``pure=True``, which ``prefect-dask`` uses, that hashing
  costs about half as much as the selection itself);
* passed as a task parameter that Prefect neither hashes (``NO_CACHE``) nor
  persists, and never sends to its API: a task run records only its name and
  state, so task runs grow with chunks, not with articles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from prefect import task
from prefect.cache_policies import NO_CACHE

import selection_core as sc
from tasks.logs import run_logger

#: Name of the task that scores one chunk (its runs are ``select-chunk-<start>``).
CHUNK_TASK_NAME: Final[str] = "select-chunk"

#: Chunks per worker when no chunk size is given: enough to even out uneven
#: chunks, few enough that the fixed cost of a task run stays small. That cost is
#: paid by the flow's own process and is not small: every submission serializes
#: the run's context and settings (about 0.2-0.7 s of CPU on this machine with
#: Prefect 3.9.1's process pool and prefect-dask).
CHUNKS_PER_WORKER: Final[int] = 4

#: Bounds of the automatic chunk size (articles).
MIN_AUTO_CHUNK_SIZE: Final[int] = 500
MAX_AUTO_CHUNK_SIZE: Final[int] = 25_000

#: The key of an extractor block that the rule reads besides its text field.


class ArticleChunk:
    """Consecutive articles ``start .. start + len(articles) - 1`` of one batch.

    ``articles`` holds selection views (:func:`selection_core.selection_view`). A plain class on
    purpose: Prefect walks the lists, dicts and dataclasses it is given as task
    parameters (looking for futures), but treats other objects as leaves; and
    Dask names the task with :meth:`__dask_tokenize__` instead of hashing every
    string.
    """

    __slots__ = ("articles", "start")

    def __init__(self, start: int, articles: Sequence[Mapping[str, Any]]) -> None:
        self.start = start
        self.articles = articles

    @property
    def stop(self) -> int:
        return self.start + len(self.articles)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArticleChunk):
            return NotImplemented
        return self.start == other.start and list(self.articles) == list(other.articles)

    __hash__ = None  # type: ignore[assignment] - mutable contents

    def __repr__(self) -> str:
        return f"ArticleChunk(start={self.start}, stop={self.stop})"

    def __dask_tokenize__(self) -> tuple[str, int, int]:
        # With pure=True (prefect-dask's choice) Dask names a task by hashing its
        # arguments unless they name themselves. The position is enough: each
        # submission also carries its own task-run id, so two never share a key.
        return ("content-selection-article-chunk", self.start, self.stop)


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


def auto_chunk_size(n_articles: int, workers: int) -> int:
    """Articles per chunk when none is given: about ``CHUNKS_PER_WORKER`` chunks per worker.

    >>> auto_chunk_size(100_000, 2), auto_chunk_size(1_000, 2), auto_chunk_size(10**7, 2)
    (12500, 500, 25000)
    """
    per_chunk = -(-n_articles // max(1, CHUNKS_PER_WORKER * workers))
    return max(MIN_AUTO_CHUNK_SIZE, min(MAX_AUTO_CHUNK_SIZE, per_chunk))


class ChunkSelections:
    """The selections of one chunk, in order.

    A plain container on purpose: Prefect walks a task's list or dataclass result
    to track where its parts flow next (thousands of ``Selection`` objects per
    chunk); it does not walk into this.
    """

    __slots__ = ("selections", "start")

    def __init__(self, start: int, selections: list[sc.Selection]) -> None:
        self.start = start
        self.selections = selections

    def __len__(self) -> int:
        return len(self.selections)

    def __repr__(self) -> str:
        return f"ChunkSelections(start={self.start}, n={len(self.selections)})"


def split_articles(articles: Sequence[Mapping[str, Any]], chunk_size: int) -> Iterator[ArticleChunk]:
    """The batch's articles as :class:`ArticleChunk` s of selection views, in order (built lazily)."""
    for start, stop in chunk_bounds(len(articles), chunk_size):
        yield ArticleChunk(start, [sc.selection_view(article) for article in articles[start:stop]])


def chunk_run_namer(task_name: str) -> Callable[[], str]:
    """A ``task_run_name`` for a task whose ``chunk`` parameter has a ``start``:
    ``<task_name>-000123``, so the runs of one flow sort in input order."""

    def name() -> str:
        from prefect.runtime import task_run

        start = getattr(task_run.parameters.get("chunk"), "start", None)
        return f"{task_name}-{start:06d}" if isinstance(start, int) else task_name

    return name


@task(
    name=CHUNK_TASK_NAME,
    task_run_name=chunk_run_namer(CHUNK_TASK_NAME),
    cache_policy=NO_CACHE,
    persist_result=False,
)
def select_chunk(chunk: ArticleChunk) -> ChunkSelections:
    """Score one chunk of a batch with the deterministic core.

    No retries: the work is pure computation on values already in memory, which
    a retry cannot cure (Dask itself reruns a task whose worker died).

    Args:
        chunk: Consecutive articles of the batch and the index of the first.

    Returns:
        One selection per article, in order, with the article's index in the whole batch.
    """
    selections = [sc.select_article(article, chunk.start + offset) for offset, article in enumerate(chunk.articles)]
    run_logger().debug("Scored articles %d..%d", chunk.start, chunk.stop - 1)
    return ChunkSelections(chunk.start, selections)
