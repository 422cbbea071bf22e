"""One article of a batch file, found without loading the batch (for ``content-selection explain``).

The batch is planned as a run plans it (:func:`selection_storage.chunks.plan_batch`: read
once, block by block, its runs of articles found without parsing them, its envelope
validated), in either format, and only the run that holds the article asked for is parsed,
in full. An id is looked for run by run (at most :data:`LOOKUP_CHUNK_ARTICLES` articles
parsed at a time), so memory is bounded by a run whatever the batch's size. The rest of the
batch is not validated: ``select`` and ``run`` do that. A refusal is the whole batch's, as
``select`` words it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import selection_core as sc
from selection_core.layout import Run
from selection_storage.chunks import BatchPlan, plan_batch, refuse_as_whole
from selection_storage.files import read_span

#: Articles parsed at a time while an id is looked for.
LOOKUP_CHUNK_ARTICLES: Final[int] = 1000


@dataclass(frozen=True)
class FoundArticle:
    """An article, its index in the batch and the batch's number of articles."""

    index: int
    article: dict[str, Any]
    total: int


def _id_matches(value: Any, wanted: str) -> bool:
    """Whether an article's ``id`` is ``wanted`` (a number matches its JSON spelling: id 7 is ``7``)."""
    if value is None:
        return False
    return value == wanted if isinstance(value, str) else json.dumps(value) == wanted


def _not_found(path: Path, total: int, index: int | None, article_id: str | None) -> sc.ArticleNotFoundError:
    if article_id is not None:
        return sc.ArticleNotFoundError(f"{path}: no article has the id {article_id!r}; check the id, or use --index")
    span = f"indexes 0 to {total - 1}" if total else "none"
    return sc.ArticleNotFoundError(f"{path}: no article at index {index}; the batch has {total} articles ({span})")


def _pick(path: Path, articles: list[dict[str, Any]], index: int | None, article_id: str | None) -> FoundArticle:
    total = len(articles)
    if index is not None and 0 <= index < total:
        return FoundArticle(index, articles[index], total)
    if article_id is not None:
        for i, article in enumerate(articles):
            if _id_matches(article.get("id"), article_id):
                return FoundArticle(i, article, total)
    raise _not_found(path, total, index, article_id)


def _articles_of(plan: BatchPlan, run: Run) -> list[dict[str, Any]]:
    """The articles of one run of the plan, parsed and validated (refused in the whole batch's words)."""
    fmt = plan.format
    data = read_span(plan.path, plan.identity, run.begin, run.end, fmt.run_prefix, fmt.run_suffix)
    try:
        return fmt.parse_run(bytes(data), str(plan.path), run)
    except sc.InvalidBatchError:
        refuse_as_whole(plan)
        raise


def find_article(
    input_path: str | os.PathLike[str], *, index: int | None = None, article_id: str | None = None
) -> FoundArticle:
    """The article at ``index``, or the first whose ``id`` is ``article_id`` (give exactly one).

    Works on JSON and JSON Lines batches alike (``index`` of a JSON Lines batch is its line number minus one).

    Raises:
        InvalidBatchError: the file is missing, unreadable or not a valid batch (as far as it was read).
        ArticleNotFoundError: no article at that index, or none with that id.
        ReadError: a transient read error.
    """
    if (index is None) == (article_id is None):
        raise ValueError("give exactly one of index and article_id")
    plan = plan_batch(Path(input_path), LOOKUP_CHUNK_ARTICLES)
    if plan.doc is not None:  # not delimited: the whole document decides
        return _pick(plan.path, plan.doc["articles"], index, article_id)
    assert plan.layout is not None
    total = plan.article_count
    for run in plan.layout.runs:
        if index is not None and run.start <= index < run.stop:
            return FoundArticle(index, _articles_of(plan, run)[index - run.start], total)
        if article_id is not None:
            for offset, article in enumerate(_articles_of(plan, run)):
                if _id_matches(article.get("id"), article_id):
                    return FoundArticle(run.start + offset, article, total)
    raise _not_found(plan.path, total, index, article_id)
