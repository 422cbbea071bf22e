"""The ``extract-crawl`` flow: a listing of web archives in, one selected batch per archive out, resumable.

Each WARC is one unit of work, done by the worker it lands on (a Dask worker, or a local worker process), which
reads it from the store and writes its output itself; this process sees counts only, and calls the Prefect API
per WARC (the progress and the table artifacts), never per page.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Annotated, Final

from prefect import flow
from prefect.artifacts import create_table_artifact
from pydantic import BaseModel, Field

from content_selection.flows.params import (
    DEFAULT_MAX_TABLE_ROWS,
    DEFAULT_OUTPUT_FORMAT,
    DaskAddress,
    OptionalCount,
    OptionalText,
    OutputFormat,
    StorageOptions,
    TableRows,
    TimeLimit,
    run_namer,
)
from content_selection.flows.refusals import refusals_fail_the_run
from content_selection.flows.runners import IN_FLIGHT_PER_WORKER, check_dask_scheduler, worker_processes
from content_selection.tasks.logs import run_logger
from content_selection.tasks.progress import artifact_progress, follower
from selection_core.errors import EXIT_IO_ERROR
from selection_crawl.job import CrawlJob
from selection_crawl.listing import SUMMARY_NAME
from selection_crawl.unit import WarcOutcome, crawl_warc
from selection_extraction import DEFAULT_TIME_LIMIT_SECONDS

CRAWL_PROGRESS_ARTIFACT_KEY: Final[str] = "crawl-progress"
CRAWL_WARCS_ARTIFACT_KEY: Final[str] = "crawl-warcs"

#: Times a WARC is sent again after Dask gave up on it (``KilledWorker``: the workers running it died
#: ``distributed.scheduler.allowed-failures`` + 1 times, 4 by default); then it fails, and a re-run tries it again.
MAX_RESENDS: Final[int] = 3

#: Least seconds between two versions of the table artifact while WARCs finish.
TABLE_INTERVAL_SECONDS: Final[float] = 5.0

#: ``finish(index, outcome)``: what the run does when a WARC is over.
Finish = Callable[[int, WarcOutcome], None]


class CrawlRunSummary(BaseModel):
    """What one ``extract-crawl`` run did (the flow's return value)."""

    listing: str = Field(description="The listing of WARCs that was read.")
    output_prefix: str = Field(description="Where the outputs and crawl.json are.")
    summary_path: str = Field(description="The job's summary, crawl.json.")
    warcs: int = Field(description="WARCs listed.")
    done: int = Field(description="WARCs with a valid output now.")
    done_before: int = Field(description="WARCs whose output was already valid when the run started.")
    failed: int = Field(description="WARCs that failed in this run.")
    pages: int = Field(description="Pages of the WARCs done.")
    articles: int = Field(description="Articles selected from the WARCs done.")
    errors: dict[str, int] = Field(description="Articles whose block has an error, per extractor.")

    def one_line(self) -> str:
        return (
            f"crawled {self.done} of {self.warcs} WARCs ({self.done_before} done before, {self.failed} failed), "
            f"{self.pages} pages -> {self.output_prefix}"
        )


def _on_processes(job: CrawlJob, workers: int | None, finish: Finish) -> None:
    """Do the WARCs on local worker processes; a worker that dies fails the WARCs in flight (a re-run does them)."""
    with worker_processes("selection_crawl.unit", workers) as (count, submit):
        todo = deque(job.todo)
        pending: dict[concurrent.futures.Future[WarcOutcome], int] = {}
        broken: str | None = None
        while todo or pending:
            while todo and broken is None and len(pending) < IN_FLIGHT_PER_WORKER * count:
                index = todo.popleft()
                pending[submit(crawl_warc, job.job(index))] = index
            if not pending:
                break
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in sorted(done, key=pending.__getitem__):
                index = pending.pop(future)
                try:
                    outcome = future.result()
                except concurrent.futures.process.BrokenProcessPool as exc:
                    broken = f"a worker process died ({exc}); run again to do what is left"
                    outcome = WarcOutcome.failed(f"{job.units[index].source}: {broken}", EXIT_IO_ERROR)
                finish(index, outcome)


def _on_dask(job: CrawlJob, address: str, finish: Finish) -> None:
    """Do the WARCs on a Dask cluster, about 2 per worker thread in flight; a WARC whose workers keep dying is sent
    again (:data:`MAX_RESENDS`), and only then fails, alone."""
    from distributed import Client, as_completed
    from distributed.scheduler import KilledWorker

    run = uuid.uuid4().hex[:12]  # a task's key: a re-run's tasks never meet a killed run's
    with Client(address, set_as_default=False, timeout=30) as client:
        sent: dict[int, int] = {}
        owner: dict[str, int] = {}
        todo = deque(job.todo)
        flowing = as_completed(loop=client.loop)

        def send(index: int) -> None:
            sent[index] = sent.get(index, 0) + 1
            key = f"crawl-warc-{run}-{index}-{sent[index]}"
            owner[key] = index
            flowing.add(client.submit(crawl_warc, job.job(index), key=key, pure=False))

        def top_up() -> None:
            threads = max(1, sum(client.nthreads().values()))
            while todo and flowing.count() < IN_FLIGHT_PER_WORKER * threads:
                send(todo.popleft())

        top_up()
        for future in flowing:
            index = owner.pop(future.key)
            try:
                outcome = future.result()
            except KilledWorker:
                if sent[index] <= MAX_RESENDS:
                    send(index)
                    continue
                outcome = WarcOutcome.failed(
                    f"{job.units[index].source}: the workers running it died, {sent[index]} times until Dask gave "
                    "up on it (KilledWorker); run again to try it again",
                    EXIT_IO_ERROR,
                )
            except Exception as exc:  # noqa: BLE001 - one WARC's failure, in its line of crawl.json
                outcome = WarcOutcome.failed(f"{job.units[index].source}: {type(exc).__name__}: {exc}", EXIT_IO_ERROR)
            finally:
                future.release()
            finish(index, dataclasses.replace(outcome, sends=sent.pop(index)))
            top_up()


class _Progress:
    """What the run shows as WARCs finish: the progress artifact, the table of WARCs (failures first, then the
    latest done), the log, and the follower of a process that runs the flow itself (its progress bar)."""

    def __init__(self, job: CrawlJob, max_rows: int) -> None:
        self.job = job
        self.max_rows = max_rows
        self.total = len(job.todo)
        self.finished = 0
        self.pages = 0
        self.latest: deque[int] = deque(maxlen=max_rows)
        self.failed: list[int] = []
        self._tabled_at = float("-inf")
        description = f"WARCs of {job.listing} done in this run ({job.resumed} of {len(job.units)} done before)"
        self._percent = artifact_progress(CRAWL_PROGRESS_ARTIFACT_KEY, description)
        self._follower = follower(CRAWL_WARCS_ARTIFACT_KEY)
        self._started = time.monotonic()

    def __call__(self, index: int, outcome: WarcOutcome) -> None:
        self.job.finish_warc(index, outcome)
        self.finished += 1
        self.pages += outcome.pages
        if outcome.state == "failed":
            self.failed.append(index)
            run_logger().warning("%s", outcome.reason)
        else:
            self.latest.append(index)
        if self._percent is not None:
            self._percent(self.finished, self.total)
        if self._follower is not None:
            self._follower(self.finished, self.total, self.pages, time.monotonic() - self._started, outcome)
        if time.monotonic() - self._tabled_at >= TABLE_INTERVAL_SECONDS:
            self.publish_table()

    def publish_table(self) -> None:
        self._tabled_at = time.monotonic()
        if not self.max_rows:
            return
        shown = [*self.failed[: self.max_rows], *reversed(self.latest)][: self.max_rows]
        rows = []
        for index in shown:
            unit, outcome = self.job.units[index], self.job.outcome(index)
            assert outcome is not None
            rows.append(
                {  # the file name first, short columns next: the UI's table is as wide as its window
                    "warc": unit.source.rsplit("/", 1)[-1],
                    "state": outcome.state,
                    "pages": outcome.pages,
                    "articles": outcome.articles,
                    "errors": sum(outcome.errors.values()),
                    "seconds": outcome.seconds,
                    "reason": (outcome.reason or "").removeprefix(f"{unit.source}: "),  # the WARC is named
                    "output": unit.relative,
                }
            )
        totals = self.job.totals()
        try:
            create_table_artifact(
                table=rows,
                key=CRAWL_WARCS_ARTIFACT_KEY,
                description=f"{totals['done']} of {totals['warcs']} WARCs done, {totals['failed']} failed; "
                f"failures first, then the latest done (at most {self.max_rows} rows); every WARC is in "
                f"{self.job.where(SUMMARY_NAME)}",
            )
        except Exception as exc:  # noqa: BLE001 - the table is informational
            run_logger().warning("Could not publish the table of WARCs: %s", exc)


@flow(
    name="extract-crawl",
    flow_run_name=run_namer("crawl", "listing", "listing"),
    description="Extract and select every WARC of a crawl's listing, one output per WARC, resuming what is done.",
    validate_parameters=True,
)
@refusals_fail_the_run
def extract_crawl(
    listing: Annotated[str, Field(min_length=1)],
    output_prefix: Annotated[str, Field(min_length=1)],
    base: OptionalText = None,
    dask_address: DaskAddress = None,
    workers: OptionalCount = None,
    time_limit_seconds: TimeLimit = DEFAULT_TIME_LIMIT_SECONDS,
    storage_options: StorageOptions = None,
    max_table_rows: TableRows = DEFAULT_MAX_TABLE_ROWS,
    output_format: OutputFormat = DEFAULT_OUTPUT_FORMAT,
) -> CrawlRunSummary:
    """Do every WARC of the listing that has no valid output: extract its pages, select them, and write
    `<output_prefix>/<its path>.jsonl` (`.parquet` for the dataset) with its record beside it; keep
    `<output_prefix>/crawl.json`.

    Args:
        listing: A text file of WARCs, one per line (gzip when named .gz, as Common Crawl's warc.paths.gz), a file or
            an object; or a folder (a prefix) of WARCs.
        output_prefix: The folder or prefix of the outputs, e.g. `s3://BUCKET/selected/CC-MAIN-2024-18`.
        base: What relative lines of the listing are under, e.g. `s3://commoncrawl/`. Empty: every line is absolute.
        dask_address: A Dask scheduler, `tcp://HOST:PORT`: each WARC is done on a worker. Empty: local processes.
        workers: Local worker processes (without a Dask address). Empty or 0: one per core.
        time_limit_seconds: Seconds one extractor may spend on one page before it is stopped (TimeoutError).
        storage_options: Options of the object store of `s3://`, `gs://`, `az://` paths (an endpoint, a region).
        max_table_rows: Most rows of the `crawl-warcs` table artifact.
        output_format: `batch`: each WARC's selected batch (JSON Lines); `dataset`: Parquet, one row per article
            with the selected text, its id, URL, date, WARC and dump (the `dataset` extra).
    """
    logger = run_logger()
    if dask_address is not None:
        check_dask_scheduler(dask_address)
    job = CrawlJob.plan(listing, output_prefix, base, time_limit_seconds, storage_options, output_format)
    where = f"the Dask cluster at {dask_address}" if dask_address else "local worker processes"
    logger.info("%d WARCs listed, %d done before: doing %d on %s", len(job.units), job.resumed, len(job.todo), where)
    progress = _Progress(job, max_table_rows)
    job.write_summary()
    try:
        if dask_address is not None:
            _on_dask(job, dask_address, progress)
        else:
            _on_processes(job, workers, progress)
    finally:
        job.close()
    progress.publish_table()
    totals = job.totals()
    summary = CrawlRunSummary(
        listing=listing,
        output_prefix=output_prefix,
        summary_path=str(job.where(SUMMARY_NAME)),
        warcs=totals["warcs"],
        done=totals["done"],
        done_before=job.resumed,
        failed=totals["failed"],
        pages=totals["pages"],
        articles=totals["articles"],
        errors=totals["errors"],
    )
    logger.info(summary.one_line())
    job.check()
    return summary
