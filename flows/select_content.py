"""The ``select-content`` flow: pick the best extractor of every article of one batch.

extract (read + validate) -> select (the deterministic core) -> persist (atomic
write) -> artifacts. All selection logic lives in ``selection_core``; this module
only chains the tasks and reports.

In-process (the default), the select step is one task, ``select-batch-in-runs``,
that reads, scores and writes the batch one run of articles after the other
(:func:`selection_storage.chunked_file.select_file`): its memory is bounded by a run
(8 MiB of input), whatever the batch's size. With a parallel task runner
(``process``, ``dask``; see :mod:`flows.runners`) the run becomes plan-batch -> one
``select-chunk`` task run per chunk of consecutive articles, on that runner, each
reading, scoring and writing its own articles -> assemble-batch -> artifacts (see
:mod:`selection_storage.chunks`): the chunks' parts are joined in article order, so
the written bytes are the same whichever runner and chunk size. Only a batch whose
articles cannot be delimited without parsing is read and scored in one piece (inside
``select-batch-in-runs`` in-process; after ``plan-batch``, which parsed it, as
``select-extractors`` -> ``persist-batch`` -> [``write-report``] on a parallel runner),
and the log and the summary say so.
"""

from __future__ import annotations

from typing import Annotated, Any

from prefect import flow
from prefect.utilities.annotations import opaque
from pydantic import BaseModel, Field

import selection_core as sc
from flows.params import (
    DEFAULT_MAX_TABLE_ROWS,
    MAX_TABLE_ROWS_LIMIT,
    DaskAddress,
    OptionalCount,
    OptionalText,
    TaskRunnerChoice,
    run_namer,
)
from flows.refusals import refusals_fail_the_run
from flows.runners import (
    IN_FLIGHT_PER_WORKER,
    TaskRunnerName,
    open_task_runner,
    resolve_task_runner,
    runner_parallelism,
    submit_in_order,
)
from selection_core.evidence import ShownEvidence, batch_evidence, counts_text, merge_evidence, read_as_text
from selection_core.layout import ONE_PIECE_REASON
from selection_storage.batch import WrittenFile
from selection_storage.chunks import BatchPlan, ChunkJob, ChunkOutcome, auto_chunk_size, plan_jobs, refuse_as_whole
from selection_storage.parts import PartJoiner, discard_parts
from selection_storage.paths import RunPaths
from tasks.artifacts import publish_artifacts
from tasks.batch import persist_batch, write_selection_report
from tasks.chunks import assemble_batch, plan_batch, select_batch_in_runs, select_chunk
from tasks.logs import run_logger
from tasks.paths import check_paths
from tasks.progress import artifact_progress
from tasks.select import PROGRESS_ARTIFACT_KEY, select_extractors


class SelectionRunSummary(BaseModel):
    """What one ``select-content`` run did (the flow's return value)."""

    input_path: str = Field(description="The batch that was read.")
    output_path: str = Field(description="The selected batch that was written.")
    report_path: str | None = Field(default=None, description="The JSON Lines report, if written.")
    articles: int = Field(description="Number of articles.")
    by_extractor: dict[str, int] = Field(description="Selections per extractor.")
    by_reason: dict[str, int] = Field(description="Decisions per reason code.")
    read_as: str = Field(default="", description="How the batch was read: in runs of articles, in chunks, or whole.")
    input_sha256: str = Field(description="SHA-256 of the input bytes.")
    output_sha256: str = Field(description="SHA-256 of the output bytes.")
    core_version: str = Field(description="Version of selection_core.")

    @classmethod
    def of(cls, paths: RunPaths, input_sha256: str, scored: Scored) -> SelectionRunSummary:
        """The summary of a run that read ``paths.input`` and wrote what ``scored`` says."""
        written, _, summary, read_as = scored
        return cls(
            input_path=str(paths.input),
            output_path=str(written.path),
            report_path=str(paths.report) if paths.report else None,
            articles=summary.articles,
            by_extractor=dict(summary.by_extractor),
            by_reason={getattr(k, "value", k): v for k, v in summary.by_reason.items()},
            read_as=read_as,
            input_sha256=input_sha256,
            output_sha256=written.sha256,
            core_version=sc.__version__,
        )

    def one_line(self) -> str:
        """A one-line human summary, e.g. for a terminal."""
        counts = counts_text(self.by_extractor)
        return f"selected {self.articles} articles ({counts}) -> {self.output_path}"


#: What a way of scoring a batch returns: the written output, what the artifacts show of its articles,
#: the counts, and how the batch was read (:func:`selection_core.evidence.read_as_text`).
Scored = tuple[WrittenFile, ShownEvidence, sc.Summary, str]


def _select_in_chunks(
    plan: BatchPlan,
    paths: RunPaths,
    chunk_size: int | None,
    runner_name: TaskRunnerName,
    dask_address: str | None,
    max_table_rows: int,
) -> Scored:
    """Score the batch chunk by chunk on the chosen runner, then write it from the chunks' parts.

    Without a chunk size, the batch is cut into about ``CHUNKS_PER_WORKER``
    chunks per worker of the runner. Jobs are submitted as workers free up, and
    the progress artifact advances as chunks complete, in order; their parts are
    joined into the output meanwhile. Whatever fails, no part file is left behind,
    and invalid input is reported as the whole-document parse reports it.

    Returns:
        The written output, what the artifacts show of its articles, the counts.
    """
    logger = run_logger()
    total = plan.article_count
    joiner: PartJoiner | None = None
    jobs: list[ChunkJob] = []
    try:
        with open_task_runner(runner_name, dask_address) as runner:
            workers = runner_parallelism(runner)
            size = chunk_size or auto_chunk_size(total, workers)
            jobs = plan_jobs(plan, size, paths.output, paths.report, max_table_rows)
            progress = artifact_progress(
                PROGRESS_ARTIFACT_KEY, f"Scoring the {total} articles of {plan.path.name} in {len(jobs)} chunk(s)"
            )
            done = 0
            joiner = PartJoiner(plan.envelope, total > 0, paths.output, paths.report, plan.format)

            def advance(_index: int, outcome: ChunkOutcome) -> None:
                nonlocal done
                done += len(outcome)
                if progress is not None:
                    progress(done, total)
                joiner.add(outcome)  # joins while later chunks are scored

            logger.info(
                "Scoring %d articles in %d chunk(s) of up to %d on the %s task runner (%d worker(s))",
                total,
                len(jobs),
                size,
                runner_name.value,
                workers,
            )
            try:
                outcomes: list[ChunkOutcome] = submit_in_order(
                    runner,
                    select_chunk,
                    jobs,
                    parameter="chunk",
                    in_flight=IN_FLIGHT_PER_WORKER * workers,
                    on_result=advance,
                )
            except sc.InvalidBatchError:
                refuse_as_whole(plan)  # raises the whole batch's refusal
                raise
        if progress is not None:
            progress(total, total)
        written = assemble_batch(
            plan.envelope, opaque(outcomes), paths.output, paths.report, plan.format, joined=opaque(joiner)
        )
    finally:  # whatever happened, no staged file and no part of this run stays
        if joiner is not None:
            joiner.discard()
        discard_parts(jobs)
    summary = sc.merge_summaries(o.summary for o in outcomes)
    evidence = merge_evidence(((o.rows, o.close_calls) for o in outcomes), max_table_rows)
    logger.info("Selected %d articles: %s", summary.articles, counts_text(summary.by_extractor))
    where = f"in parallel on the {runner_name.value} task runner"
    return written, evidence, summary, read_as_text(len(jobs), False, where, "chunk")


def select_whole(doc: dict[str, Any], paths: RunPaths, max_table_rows: int) -> Scored:
    """Score the batch in one task in this process, then write it (only where its articles cannot be delimited)."""
    run_logger().warning("%s: %s", paths.input, ONE_PIECE_REASON)
    selections = select_extractors(opaque(doc), batch_name=paths.input.name)
    written = persist_batch(opaque(doc), opaque(selections), paths.output)
    if paths.report is not None:
        write_selection_report(opaque(doc), opaque(selections), paths.report)
    evidence = batch_evidence(doc, selections, max_table_rows)
    return written, evidence, sc.summarize(selections), read_as_text(1, True)


def select_in_runs(paths: RunPaths, max_table_rows: int, run_articles: int | None) -> tuple[str, Scored]:
    """Score the batch one run of articles after the other in this process (in-process runs, ``extract-and-select``)."""
    result = select_batch_in_runs(paths, max_table_rows, run_articles)
    assert result.evidence is not None
    read_as = read_as_text(result.runs, result.one_piece)
    return result.input_sha256, (result.written, result.evidence, result.summary, read_as)


def publish_selection(paths: RunPaths, input_sha256: str, scored: Scored, max_table_rows: int) -> None:
    """The run's artifacts: scores table, closest calls and summary (``extract-and-select`` too)."""
    written, evidence, summary, read_as = scored
    publish_artifacts(
        opaque(evidence),
        summary,
        input_path=paths.input,
        input_sha256=input_sha256,
        output_path=written.path,
        output_sha256=written.sha256,
        report_path=paths.report,
        max_rows=max_table_rows,
        read_as=read_as,
    )


def _select(
    paths: RunPaths,
    chunk_size: int | None,
    runner_name: TaskRunnerName,
    dask_address: str | None,
    max_table_rows: int,
) -> tuple[str, Scored]:
    """Read, score and write the batch, run by run or in chunks; the input's SHA-256 and what was scored."""
    if runner_name is TaskRunnerName.IN_PROCESS:
        return select_in_runs(paths, max_table_rows, chunk_size)
    plan = plan_batch(paths.input, chunk_size)
    if plan.doc is not None:  # its articles could not be delimited: one piece
        return plan.sha256, select_whole(plan.doc, paths, max_table_rows)
    return plan.sha256, _select_in_chunks(plan, paths, chunk_size, runner_name, dask_address, max_table_rows)


@flow(
    name="select-content",
    flow_run_name=run_namer("select", "input_path", "batch"),
    description="Pick, for every article of an extracted batch, the extractor whose text the others agree with.",
    validate_parameters=True,
)
@refusals_fail_the_run
def select_content(
    input_path: Annotated[str, Field(min_length=1)],
    output_path: OptionalText = None,
    report_path: OptionalText = None,
    max_table_rows: Annotated[int, Field(ge=0, le=MAX_TABLE_ROWS_LIMIT)] = DEFAULT_MAX_TABLE_ROWS,
    data_root: OptionalText = None,
    require_data_root: bool = False,
    task_runner: TaskRunnerChoice = None,
    dask_address: DaskAddress = None,
    chunk_size: OptionalCount = None,
) -> SelectionRunSummary:
    """Select the best extractor of every article of one batch and write the result.

    Args:
        input_path: The extracted batch (JSON with an `articles` array), e.g.
            `/data/batches/2024-05-01_extracted.json`. Relative paths are taken
            from the data root when one is configured, else from the working directory.
        output_path: Where to write the selected batch. Leave empty for
            `<stem>_selected.json` beside the input. Never the input itself.
        report_path: Optional file for the full per-article explanation as JSON
            Lines (one object per article). Leave empty for no report.
        max_table_rows: Most rows shown in the `selection-scores` table artifact
            (the first articles of the batch); the cap is stated in the artifact.
        data_root: Directory that every path of the run must resolve inside
            (symlinks and `..` followed). Leave empty to use the
            CONTENT_SELECTION_DATA_ROOT environment variable; with neither, paths
            are not confined.
        require_data_root: Refuse to run unless a data root is configured. The
            triggered deployment sets it, because its path comes from an event.
        task_runner: Where the articles are scored: `in-process` (this process),
            `process` (a pool of one process per core) or `dask` (a Dask cluster).
            Leave empty for the CONTENT_SELECTION_TASK_RUNNER environment
            variable, else `dask` when a scheduler address is set, else `in-process`.
            The output is byte-identical whichever is chosen.
        dask_address: Scheduler of a running Dask cluster, as `tcp://HOST:PORT`
            (its workers must have this project installed and see the input and
            output folders at the same paths). Leave empty for the
            CONTENT_SELECTION_DASK_ADDRESS environment variable; with neither,
            `dask` starts a local cluster of 2 worker processes for the run.
        chunk_size: Most articles per chunk; each chunk of consecutive articles is
            read, scored and written by one task run (in-process: one after the
            other in one task). Leave at 0 for chunks bounded by bytes only: runs of
            at most 8 MiB of input in-process, or about 4 chunks per worker (500 to
            25000 articles, at most 64 MiB each) on `process` and `dask`.

    Returns:
        A summary: paths, counts per extractor and per reason, SHA-256 of input and output.
        A refusal (invalid batch, refused path) ends the run Failed with its one-line message.
    """
    logger = run_logger()
    paths = check_paths(input_path, output_path, report_path, data_root, require_data_root)
    if paths.data_root is not None:
        logger.info("Paths confined to the data root %s", paths.data_root)
    runner_name, address = resolve_task_runner(task_runner, dask_address)
    input_sha256, scored = _select(paths, chunk_size, runner_name, address, max_table_rows)
    publish_selection(paths, input_sha256, scored, max_table_rows)
    result = SelectionRunSummary.of(paths, input_sha256, scored)
    logger.info(result.one_line())
    return result
