"""The file steps of a one-piece run on a parallel runner: write the selected batch and the report.

Each task is one call into :mod:`selection_storage.batch` (or
:mod:`selection_storage.report`) and is retried, with backoff, only when the
failure is transient I/O (:func:`tasks.options.io_task_options`): an invalid
batch or a refused path fails on the first try. None of them computes a cache
key or persists its result, because their inputs and outputs are as large as the batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task

import selection_core as sc
from selection_storage.batch import WrittenFile, write_selected
from selection_storage.report import write_report
from tasks.logs import run_logger
from tasks.options import io_task_options

__all__ = ["WrittenFile", "persist_batch", "write_selection_report"]


@task(name="persist-batch", **io_task_options())
def persist_batch(doc: dict[str, Any], selections: list[sc.Selection], output_path: Path) -> WrittenFile:
    """Write the input document with ``selected_extractor`` set in every article, atomically.

    Applying the selections is idempotent, so a retry writes the same bytes.

    Args:
        doc: The validated batch (updated in place).
        selections: One selection per article, from the select task.
        output_path: The checked output location.

    Returns:
        The written file with the SHA-256 of its bytes.

    Raises:
        OutputPathError: the location is refused (not retried).
        WriteError: writing failed; retried when the core marks it transient.
    """
    written = write_selected(doc, selections, output_path)
    run_logger().info("Wrote %s: %d bytes, sha256 %s", output_path, written.size_bytes, written.sha256)
    return written


@task(name="write-report", **io_task_options())
def write_selection_report(doc: dict[str, Any], selections: list[sc.Selection], report_path: Path) -> Path:
    """Write the full per-article explanation as JSON Lines, atomically.

    Args:
        doc: The validated batch (each line gets its article's ``id`` and ``url``).
        selections: One selection per article.
        report_path: The checked report location.

    Returns:
        The report path.
    """
    write_report(report_path, doc["articles"], selections)
    run_logger().info("Wrote the JSON Lines report %s (%d lines)", report_path, len(selections))
    return Path(report_path)
