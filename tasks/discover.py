"""The ``find-stale-batches`` task: the batches of a directory that still need a selection."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from selection_storage import directory as directories
from tasks.options import io_task_options


@task(name="find-stale-batches", **io_task_options())
def find_stale_batches(directory: Path) -> list[Path]:
    """The batches under ``directory`` (recursively, in sorted order) whose ``_selected`` file is missing or older."""
    return directories.find_stale_batches(directory)
