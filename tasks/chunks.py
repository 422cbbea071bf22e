"""The chunked selection's tasks: ``plan-batch``, ``select-chunk`` (once per chunk) and ``assemble-batch``,
and ``select-batch-in-runs`` (all three, one chunk after the other, in this process).

Each is one call into :mod:`selection_storage.chunks`, :mod:`selection_storage.parts`
or :mod:`selection_storage.chunked_file` (where the plan, the scoring of one chunk
and the assembly of the parts are described) and is retried only on transient
I/O; an invalid chunk fails at once (reported as the whole-document parse does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from prefect import task

from selection_core.evidence import article_row, counts_text, read_as_text
from selection_core.formats import BatchFormat
from selection_storage import chunks
from selection_storage.batch import WrittenFile
from selection_storage.chunked_file import RunResult, select_file
from selection_storage.chunks import BatchPlan, ChunkJob, ChunkOutcome
from selection_storage.parts import PartJoiner, assemble_parts
from selection_storage.paths import RunPaths
from tasks.logs import run_logger
from tasks.options import chunk_run_namer, io_task_options
from tasks.progress import artifact_progress
from tasks.select import PROGRESS_ARTIFACT_KEY


def log_selected(result: RunResult) -> None:
    """The log lines of a run selected in this process: how it was read, what was selected, what was written."""
    logger = run_logger()
    log = logger.warning if result.one_piece else logger.info
    log(
        "Read %s (%s bytes, sha256 %s) %s",
        result.input_path,
        result.written.size_bytes,
        result.input_sha256,
        read_as_text(result.runs, result.one_piece),
    )
    logger.info("Selected %d articles: %s", result.summary.articles, counts_text(result.summary.by_extractor))
    logger.info("Wrote %s: %d bytes, sha256 %s", result.written.path, result.written.size_bytes, result.written.sha256)


#: Name of the task that scores one chunk (its runs are ``select-chunk-<start>``).
CHUNK_TASK_NAME: Final[str] = "select-chunk"


@task(name="plan-batch", **io_task_options())
def plan_batch(input_path: Path, run_articles: int | None = None) -> BatchPlan:
    """Hash the batch, find where its runs of articles lie, and validate everything else.

    Args:
        input_path: The ``*_extracted.json`` file.
        run_articles: Most articles in one run (the chunk size asked for, if smaller than the default).

    Raises:
        InvalidBatchError: the batch is not valid (as the whole-document parse reports it).
        ReadError: a transient read error, retried with backoff.
    """
    plan = chunks.plan_batch(input_path, run_articles)  # read in one piece: the flow says so (select_whole)
    run_logger().info(
        "Read %s: %d articles, %d bytes, sha256 %s", plan.path, plan.article_count, plan.size_bytes, plan.sha256
    )
    return plan


@task(name=CHUNK_TASK_NAME, task_run_name=chunk_run_namer(CHUNK_TASK_NAME), **io_task_options())
def select_chunk(chunk: ChunkJob) -> ChunkOutcome:
    """Read, validate, score and write one chunk of a batch with the deterministic core.

    Retried only on transient I/O errors; an invalid chunk fails at once (the
    flow then reports it as the whole-document parse does).

    Args:
        chunk: Which articles, where they lie in the input, where to write them.

    Returns:
        The chunk's counts, its rows of the scores table, its first close calls, and its part files.
    """
    outcome = chunks.score_chunk(chunk, article_row)
    run_logger().debug("Scored articles %d..%d", chunk.start, chunk.stop - 1)
    return outcome


@task(name="assemble-batch", **io_task_options())
def assemble_batch(
    envelope: dict[str, Any],
    outcomes: Sequence[ChunkOutcome],
    output_path: Path,
    report_path: Path | None,
    fmt: BatchFormat,
    joined: PartJoiner | None = None,
) -> WrittenFile:
    """Write the selected batch (and the report) from the chunks' parts, atomically and as one group.

    Completes ``joined`` when it holds every part, else joins the parts again
    (a retry after a transient error always does); see :func:`selection_storage.parts.assemble_parts`.

    Returns:
        The written output, with the SHA-256 of its bytes.
    """
    written = assemble_parts(envelope, outcomes, output_path, report_path, fmt, joined)
    run_logger().info("Wrote %s: %d bytes, sha256 %s", output_path, written.size_bytes, written.sha256)
    return written


@task(name="select-batch-in-runs", **io_task_options())
def select_batch_in_runs(paths: RunPaths, max_table_rows: int, run_articles: int | None = None) -> RunResult:
    """Read, score and write the batch one run of articles after the other in this process, never holding it whole.

    See :func:`selection_storage.chunked_file.select_file` (the bytes of the one-piece
    path; a batch that must be read whole is, and the log says so). Inside a run, the
    ``selection-progress`` artifact follows the runs. Retried only on transient I/O.

    Args:
        paths: The checked input, output and report.
        max_table_rows: Rows of the scores table to keep (the first articles).
        run_articles: Most articles in one run (default: bounded by bytes).

    Returns:
        The written output, its counts, and what the artifacts show of the batch (rows, closest calls).
    """
    progress = artifact_progress(PROGRESS_ARTIFACT_KEY, f"Scoring the articles of {paths.input.name}")
    result = select_file(paths.input, paths.output, paths.report, progress, max_table_rows, run_articles)
    log_selected(result)
    return result
