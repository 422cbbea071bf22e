"""The progress artifact of a long task: :class:`selection_core.progress.PercentProgress` with an artifact sink."""

from __future__ import annotations

from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.context import FlowRunContext, TaskRunContext

from selection_core.progress import PercentProgress
from tasks.logs import run_logger


class ArtifactSink:
    """Creates the progress artifact ``key`` at the first update and updates it after.

    A failed call is logged and never fails the work it reports on.
    """

    def __init__(self, key: str, description: str) -> None:
        self.key = key
        self.description = description
        self.artifact_id: UUID | None = None

    def __call__(self, percent: int) -> None:
        creating = self.artifact_id is None
        try:
            if self.artifact_id is None:
                self.artifact_id = create_progress_artifact(
                    progress=float(percent), key=self.key, description=self.description
                )
            else:
                update_progress_artifact(artifact_id=self.artifact_id, progress=float(percent))
        except Exception as exc:  # noqa: BLE001 - progress is informational
            run_logger().warning("Could not %s the progress artifact: %s", "create" if creating else "update", exc)


def artifact_progress(key: str, description: str, *, start: bool = True) -> PercentProgress | None:
    """A progress reporter that updates the artifact ``key``; None outside a run (a task called with ``.fn()``).

    With ``start`` the artifact is created at 0 % at once, before the work begins.
    """
    if TaskRunContext.get() is None and FlowRunContext.get() is None:
        return None
    progress = PercentProgress(ArtifactSink(key, description))
    if start:
        progress(0, 1)
    return progress
