"""The chunked selection's tasks: ``plan-batch``, ``select-chunk`` (once per chunk) and ``assemble-batch``.

Each is one call into :mod:`selection_storage.chunks` or :mod:`selection_storage.parts`
(where the plan, the scoring of one chunk and the assembly of the parts are
described) and is retried only on transient I/O; an invalid chunk fails at once
(the flow then reports it as the whole-document parse does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from prefect import task

from selection_core.evidence import article_row
from selection_storage import chunks
from selection_storage.batch import WrittenFile
from selection_storage.chunks import BatchPlan, ChunkJob, ChunkOutcome
from selection_storage.parts import PartJoiner, assemble_parts
from tasks.logs import run_logger
from tasks.options import chunk_run_namer, io_task_options

#: Name of the task that scores one chunk (its runs are ``select-chunk-<start>``).
CHUNK_TASK_NAME: Final[str] = "select-chunk"


@task(name="plan-batch", **io_task_options())
def plan_batch(input_path: Path) -> BatchPlan:
    """Hash the batch, find where its articles lie, and validate everything else.

    Args:
        input_path: The ``*_extracted.json`` file.

    Raises:
        InvalidBatchError: the batch is not valid (as the whole-document parse reports it).
        ReadError: a transient read error, retried with backoff.
    """
    plan = chunks.plan_batch(input_path)
    if plan.doc is not None:
        run_logger().info(
            "The articles of %s could not be delimited without parsing; scoring it in one piece", plan.path
        )
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
    joined: PartJoiner | None = None,
) -> WrittenFile:
    """Write the selected batch (and the report) from the chunks' parts, atomically and as one group.

    Completes ``joined`` when it holds every part, else joins the parts again
    (a retry after a transient error always does); see :func:`selection_storage.parts.assemble_parts`.

    Returns:
        The written output, with the SHA-256 of its bytes.
    """
    written = assemble_parts(envelope, outcomes, output_path, report_path, joined)
    run_logger().info("Wrote %s: %d bytes, sha256 %s", output_path, written.size_bytes, written.sha256)
    return written
