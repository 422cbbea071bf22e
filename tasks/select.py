"""The ``select-extractors`` task: the deterministic core, with a progress artifact while it scores."""

from __future__ import annotations

from typing import Any, Final

from prefect import task

import selection_core as sc
from selection_core.evidence import counts_text
from tasks.logs import run_logger
from tasks.options import local_task_options
from tasks.progress import artifact_progress

#: Key of the progress artifact updated while a batch is scored (whole, or in chunks by the flow).
PROGRESS_ARTIFACT_KEY: Final[str] = "selection-progress"


@task(name="select-extractors", **local_task_options())
def select_extractors(doc: dict[str, Any], batch_name: str = "") -> list[sc.Selection]:
    """Pick the best extractor of every article with the deterministic core.

    Pure computation: never retried. Inside a run, a progress artifact (key
    ``selection-progress``) follows the scoring; through ``.fn()`` no artifact is made.

    Args:
        doc: A batch validated by the extract task.
        batch_name: Name of the batch, for the progress artifact's description.

    Returns:
        One :class:`selection_core.Selection` per article, in article order,
        each with its explanation.
    """
    articles = doc["articles"]
    label = f" of {batch_name}" if batch_name else ""
    progress = artifact_progress(PROGRESS_ARTIFACT_KEY, f"Scoring the {len(articles)} articles{label}")
    selections = sc.select_articles(articles, progress=progress)
    if progress is not None:
        progress(len(articles), len(articles))
    summary = sc.summarize(selections)
    run_logger().info("Selected %d articles: %s", summary.articles, counts_text(summary.by_extractor))
    return selections
