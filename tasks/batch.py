"""The file steps of a run: read and validate a batch, write the selected batch and the report.

Each task is one call into the core's file shell (``selection_storage.files``) and is
retried, with backoff, only when the failure is transient I/O
(:func:`tasks.options.retry_on_transient_io`): an invalid batch or a refused
path fails on the first try. None of them computes a cache key or persists its
result, because their inputs and outputs are as large as the batch.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task

import selection_core as sc
from selection_storage.files import read_input, write_atomic, write_report
from tasks.logs import run_logger
from tasks.options import io_task_options

_IO_TASK_OPTIONS: dict[str, Any] = io_task_options()


@dataclass(frozen=True)
class LoadedBatch:
    """A validated batch and the fingerprint of the bytes it was read from."""

    path: Path
    doc: dict[str, Any]
    sha256: str
    size_bytes: int

    @property
    def article_count(self) -> int:
        return len(self.doc["articles"])


@dataclass(frozen=True)
class WrittenFile:
    """A file this run wrote, with the fingerprint of its bytes."""

    path: Path
    sha256: str
    size_bytes: int


@task(name="extract-batch", **_IO_TASK_OPTIONS)
def extract_batch(input_path: Path) -> LoadedBatch:
    """Read the batch the extraction flow wrote and validate it with the core.

    Args:
        input_path: The ``*_extracted.json`` file.

    Returns:
        The parsed document, with the SHA-256 and size of the bytes read.

    Raises:
        InvalidBatchError: missing, unreadable, not JSON or wrong shape (not retried).
        OSError: a transient read error, retried with backoff.
    """
    data = read_input(input_path)
    doc = sc.parse_batch(data, str(input_path))
    batch = LoadedBatch(
        path=Path(input_path),
        doc=doc,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
    )
    run_logger().info(
        "Read %s: %d articles, %d bytes, sha256 %s",
        input_path,
        batch.article_count,
        batch.size_bytes,
        batch.sha256,
    )
    return batch


@task(name="persist-batch", **_IO_TASK_OPTIONS)
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
    data = sc.dump_batch(sc.apply_selections(doc, selections))
    write_atomic(output_path, data)
    written = WrittenFile(Path(output_path), hashlib.sha256(data).hexdigest(), len(data))
    run_logger().info("Wrote %s: %d bytes, sha256 %s", output_path, written.size_bytes, written.sha256)
    return written


@task(name="write-report", **_IO_TASK_OPTIONS)
def write_selection_report(selections: list[sc.Selection], report_path: Path) -> Path:
    """Write the full per-article explanation as JSON Lines, atomically.

    Args:
        selections: One selection per article.
        report_path: The checked report location.

    Returns:
        The report path.
    """
    write_report(report_path, selections)
    run_logger().info("Wrote the JSON Lines report %s (%d lines)", report_path, len(selections))
    return Path(report_path)
