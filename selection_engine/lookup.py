"""One article of a batch file, found by parsing only the chunks up to it (``content-selection explain``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Final

import selection_core as sc
from selection_core.layout import Chunk
from selection_engine.engine import Plan, plan_batch
from selection_storage.stores import location, store

LOOKUP_CHUNK_ARTICLES: Final[int] = 1000


@dataclass(frozen=True)
class FoundArticle:
    """An article, its index in the batch and the batch's number of articles."""

    index: int
    article: dict[str, Any]
    total: int


def _id_matches(value: Any, wanted: str) -> bool:
    # a number matches its JSON spelling: id 7 is "7"
    if value is None:
        return False
    return value == wanted if isinstance(value, str) else json.dumps(value) == wanted


def _articles_of(plan: Plan, chunk: Chunk) -> list[dict[str, Any]]:
    fmt = plan.format
    data = store(plan.path).read_span(plan.identity, chunk.begin, chunk.end, fmt.chunk_prefix, fmt.chunk_suffix)
    return fmt.parse(data, str(plan.path), chunk)


def find_article(
    input_path: str | os.PathLike[str],
    *,
    index: int | None = None,
    article_id: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> FoundArticle:
    """The article at ``index``, or the first whose ``id`` is ``article_id`` (give exactly one).

    Raises:
        InvalidBatchError: the file is not a valid batch (as far as it was read).
        ArticleNotFoundError: no article at that index, or none with that id.
    """
    plan = plan_batch(location(input_path, storage_options), chunk_articles=LOOKUP_CHUNK_ARTICLES)
    total = plan.layout.articles
    for chunk in plan.layout.chunks:
        if index is not None and chunk.start <= index < chunk.stop:
            return FoundArticle(index, _articles_of(plan, chunk)[index - chunk.start], total)
        if article_id is not None:
            for offset, article in enumerate(_articles_of(plan, chunk)):
                if _id_matches(article.get("id"), article_id):
                    return FoundArticle(chunk.start + offset, article, total)
    if article_id is not None:
        raise sc.ArticleNotFoundError(
            f"{plan.path}: no article has the id {article_id!r}; check the id, or use --index"
        )
    span = f"indexes 0 to {total - 1}" if total else "none"
    raise sc.ArticleNotFoundError(f"{plan.path}: no article at index {index}; the batch has {total} articles ({span})")
