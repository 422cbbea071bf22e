"""The selection's tasks: ``check-paths``, ``find-stale-batches``, ``select-batch`` and ``select-chunk``."""

from __future__ import annotations

from typing import Any, Final

from prefect import task

from content_selection.shell.logs import run_logger
from content_selection.shell.options import chunk_run_namer, io_task_options, local_task_options
from content_selection.shell.progress_artifacts import artifact_progress
from selection_core.chunks import SelectedChunk
from selection_core.dataset import BATCH
from selection_core.evidence import counts_text, read_as_text
from selection_engine import engine
from selection_engine.engine import ChunkJob, MapJobs, Selected
from selection_storage import directory as directories
from selection_storage.paths import RunPaths, resolve_run_paths
from selection_storage.stores import Location

#: Key of the progress artifact updated while a batch is selected.
PROGRESS_ARTIFACT_KEY: Final[str] = "selection-progress"

#: Where the chunks of an in-process selection are selected, as its log and summary say.
IN_PROCESS: Final[str] = "one after the other in this process"

CHUNK_TASK_NAME: Final[str] = "select-chunk"


@task(name="check-paths", **local_task_options())
def check_paths(
    input_path: str,
    output_path: str | None = None,
    report_path: str | None = None,
    data_root: str | None = None,
    require_data_root: bool = False,
    storage_options: dict[str, Any] | None = None,
    input_exists: bool = True,
    output_format: str = BATCH,
) -> RunPaths:
    """Resolve and check the run's paths (:func:`~selection_storage.paths.resolve_run_paths`)."""
    return resolve_run_paths(
        input_path,
        output_path,
        report_path,
        data_root,
        require_data_root,
        storage_options=storage_options,
        input_exists=input_exists,
        output_format=output_format,
    )


@task(name="find-stale-batches", **io_task_options())
def find_stale_batches(directory: Location, output_format: str = BATCH) -> list[Location]:
    """The batches under ``directory`` (a folder or a prefix), sorted, whose ``_selected`` file (of that format) is
    missing or older; on the way, the staged files there whose writer is gone are removed (and logged)."""
    for orphan in directories.remove_orphans_under(directory):
        run_logger().warning("Removed %s: a staged file (or unfinished upload) whose writer is gone", orphan)
    return directories.find_stale_batches(directory, output_format)


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
        max_table_rows: Rows of the scores table to keep (the first articles).
        chunk_size: Most articles per chunk (default: bounded by bytes).
        workers, map_jobs: Where the chunks are selected (default: here, one after the other).
        where: How the log says where they were selected.
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
        output_format=paths.output_format,
    )
    logger = run_logger()
    read_as = read_as_text(selected.chunks, where)
    logger.info("Read %s (%d bytes, sha256 %s) %s", paths.input, selected.input_size, selected.input_sha256, read_as)
    logger.info("Selected %d articles: %s", selected.summary.articles, counts_text(selected.summary.by_extractor))
    logger.info("Wrote %s: %d bytes, sha256 %s", selected.output_path, selected.output_size, selected.output_sha256)
    return selected


@task(name=CHUNK_TASK_NAME, task_run_name=chunk_run_namer(CHUNK_TASK_NAME), **io_task_options())
def select_chunk(chunk: ChunkJob) -> SelectedChunk:
    """Read, validate and select one chunk of a batch and write its part files."""
    return engine.select_job(chunk)
