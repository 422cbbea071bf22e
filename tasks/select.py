"""The selection's tasks: ``select-batch`` (a batch file, chunk by chunk) and ``select-chunk`` (one chunk)."""

from __future__ import annotations

from typing import Final

from prefect import task

from selection_core.chunks import SelectedChunk
from selection_core.evidence import counts_text, read_as_text
from selection_storage import engine
from selection_storage.engine import ChunkJob, MapJobs, Selected
from selection_storage.paths import RunPaths
from tasks.logs import run_logger
from tasks.options import chunk_run_namer, io_task_options
from tasks.progress import artifact_progress

#: Key of the progress artifact updated while a batch is selected.
PROGRESS_ARTIFACT_KEY: Final[str] = "selection-progress"

#: Where the chunks of an in-process selection are selected, as its log and summary say.
IN_PROCESS: Final[str] = "one after the other in this process"

#: Name of the task that selects one chunk elsewhere (its runs are ``select-chunk-<start>``).
CHUNK_TASK_NAME: Final[str] = "select-chunk"


@task(name="select-batch", **io_task_options())
def select_batch(
    paths: RunPaths,
    max_table_rows: int,
    chunk_size: int | None = None,
    workers: int = 1,
    map_jobs: MapJobs | None = None,
    where: str = IN_PROCESS,
) -> Selected:
    """Select every article of the batch chunk by chunk and write the output (and report).

    Args:
        paths: The checked input, output and report.
        max_table_rows: Rows of the scores table to keep (the first articles).
        chunk_size: Most articles per chunk (default: bounded by bytes).
        workers, map_jobs: Where the chunks are selected (default: here, one after the other).
        where: How the log says where they were selected.

    Returns:
        What was written, its counts, and what the artifacts show of the batch.
    """
    progress = artifact_progress(PROGRESS_ARTIFACT_KEY, f"Selecting the articles of {paths.input.name}")
    selected = engine.select_file(
        paths.input,
        paths.output,
        paths.report,
        evidence_rows=max_table_rows,
        chunk_articles=chunk_size,
        progress=progress,
        workers=workers,
        map_jobs=map_jobs,
    )
    logger = run_logger()
    read_as = read_as_text(selected.chunks, where)
    logger.info("Read %s (%d bytes, sha256 %s) %s", paths.input, selected.input_size, selected.input_sha256, read_as)
    logger.info("Selected %d articles: %s", selected.summary.articles, counts_text(selected.summary.by_extractor))
    logger.info("Wrote %s: %d bytes, sha256 %s", selected.output_path, selected.output_size, selected.output_sha256)
    return selected


@task(name=CHUNK_TASK_NAME, task_run_name=chunk_run_namer(CHUNK_TASK_NAME), **io_task_options())
def select_chunk(chunk: ChunkJob) -> SelectedChunk:
    """Read, validate and select one chunk of a batch and write its part files.

    Args:
        chunk: Which articles, where they lie in the input, where to write them.

    Returns:
        The chunk's counts, its rows of the scores table and its first close calls.
    """
    return engine.select_job(chunk)
