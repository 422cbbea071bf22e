"""Progress artifacts of long tasks, which a process running the flow itself can also follow on its terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.context import FlowRunContext, TaskRunContext

from content_selection.shell.logs import run_logger
from selection_core.batch import ProgressCallback
from selection_core.progress import PercentProgress

_FOLLOWERS: dict[str, Callable[..., None]] = {}


def _artifact_sink(key: str, description: str) -> Callable[[int], None]:
    """Creates the progress artifact ``key`` at the first update, updates it after; a failure is only logged."""
    artifact_id: UUID | None = None

    def update(percent: int) -> None:
        nonlocal artifact_id
        try:
            if artifact_id is None:
                artifact_id = create_progress_artifact(progress=float(percent), key=key, description=description)
            else:
                update_progress_artifact(artifact_id=artifact_id, progress=float(percent))
        except Exception as exc:  # noqa: BLE001 - progress is informational
            run_logger().warning("Could not %s the progress artifact: %s", "update" if artifact_id else "create", exc)

    return update


@contextlib.contextmanager
def follow_progress(followers: Mapping[str, Callable[..., None]]) -> Iterator[None]:
    """While inside, the progress artifacts of these keys made in this process also report to their follower."""
    before = dict(_FOLLOWERS)
    _FOLLOWERS.update(followers)
    try:
        yield
    finally:
        _FOLLOWERS.clear()
        _FOLLOWERS.update(before)


def follower(key: str) -> Callable[..., None] | None:
    """The follower of the progress artifact ``key`` in this process (what it is called with is the key's own)."""
    return _FOLLOWERS.get(key)


def artifact_progress(key: str, description: str, *, start: bool = True) -> ProgressCallback | None:
    """A progress reporter that updates the artifact ``key`` (created at 0 % at once with ``start``);
    outside a run, the key's follower, or None."""
    follower = _FOLLOWERS.get(key)
    if TaskRunContext.get() is None and FlowRunContext.get() is None:
        return follower
    progress = PercentProgress(_artifact_sink(key, description))
    if start:
        progress(0, 1)
    if follower is None:
        return progress

    def both(done: int, total: int) -> None:
        progress(done, total)
        follower(done, total)

    return both
