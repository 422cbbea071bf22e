"""The ``check-paths`` task: where a selection run may read and write (see :mod:`selection_storage.paths`)."""

from __future__ import annotations

from prefect import task

from selection_storage.paths import RunPaths, resolve_run_paths
from tasks.options import local_task_options


@task(name="check-paths", **local_task_options())
def check_paths(
    input_path: str,
    output_path: str | None = None,
    report_path: str | None = None,
    data_root: str | None = None,
    require_data_root: bool = False,
) -> RunPaths:
    """Resolve and check the run's paths (see :func:`resolve_run_paths`). Never retried."""
    return resolve_run_paths(input_path, output_path, report_path, data_root, require_data_root)
