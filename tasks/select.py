"""The select step: the deterministic core, with a progress artifact while it scores."""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID

from prefect import task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext

import selection_core as sc
from tasks.logs import run_logger
from tasks.options import IO_RETRIES, IO_RETRY_DELAYS, retry_on_transient_io

#: Key of the progress artifact updated while a batch is scored.
PROGRESS_ARTIFACT_KEY: Final[str] = "selection-progress"


class ProgressReporter:
    """Turns the core's ``progress(done, total)`` calls into progress-artifact updates.

    The artifact is created at 0 % before scoring starts and updated only when the
    whole percentage moves, so a long batch costs a bounded number of API calls
    (at most 101). A failed update is logged and never fails the selection.
    """

    def __init__(self, total: int, description: str) -> None:
        self._total = total
        self._description = description
        self._last_percent = -1
        self._artifact_id: UUID | None = None

    @property
    def artifact_id(self) -> UUID | None:
        return self._artifact_id

    def start(self) -> None:
        try:
            self._artifact_id = create_progress_artifact(
                progress=0.0, key=PROGRESS_ARTIFACT_KEY, description=self._description
            )
            self._last_percent = 0
        except Exception as exc:  # noqa: BLE001 - progress is informational
            run_logger().warning("Could not create the progress artifact: %s", exc)

    def __call__(self, done: int, total: int) -> None:
        if self._artifact_id is None:
            return
        percent = 100 if total <= 0 else (100 * done) // total
        if percent <= self._last_percent:
            return
        try:
            update_progress_artifact(artifact_id=self._artifact_id, progress=float(percent))
            self._last_percent = percent
        except Exception as exc:  # noqa: BLE001 - progress is informational
            run_logger().warning("Could not update the progress artifact: %s", exc)


@task(
    name="select-extractors",
    retries=IO_RETRIES,
    retry_delay_seconds=IO_RETRY_DELAYS,
    retry_condition_fn=retry_on_transient_io,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def select_extractors(doc: dict[str, Any], batch_name: str = "") -> list[sc.Selection]:
    """Pick the best extractor of every article with the deterministic core.

    Inside a run, a progress artifact (key ``selection-progress``) follows the
    scoring; through ``.fn()`` no artifact is made.

    Args:
        doc: A batch validated by the extract task.
        batch_name: Name of the batch, for the progress artifact's description.

    Returns:
        One :class:`selection_core.Selection` per article, in article order,
        each with its explanation.
    """
    articles = doc["articles"]
    progress: ProgressReporter | None = None
    if TaskRunContext.get() is not None:
        label = f" of {batch_name}" if batch_name else ""
        progress = ProgressReporter(len(articles), f"Scoring the {len(articles)} articles{label}")
        progress.start()
    selections = sc.select_articles(articles, progress=progress)
    if progress is not None:
        progress(len(articles), len(articles))
    summary = sc.summarize(selections)
    run_logger().info(
        "Selected %d articles: %s",
        summary.articles,
        ", ".join(f"{name} {count}" for name, count in summary.by_extractor.items()),
    )
    return selections
