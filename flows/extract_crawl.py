"""The ``extract-crawl`` flow: a listing of web archives in, one selected batch per archive out, resumable.

Each WARC is done in a process of its own, started and watched by a thread of the worker it lands on (a Dask
worker, or this process: :mod:`selection_crawl.process`); it reads the WARC from the store, commits its progress
there and writes its output itself. This process sees counts only (WARCs ended, and pages done every few seconds),
and calls the Prefect API at most every few seconds (the progress and the table artifacts), never per page.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from dataclasses import dataclass
from typing import Annotated, Final

from prefect import flow
from prefect.artifacts import create_table_artifact
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from content_selection.shell.credentials import with_credentials
from content_selection.shell.ended import RUN_END_HOOKS
from content_selection.shell.logs import run_logger
from content_selection.shell.params import (
    DEFAULT_MAX_TABLE_ROWS,
    DEFAULT_OUTPUT_FORMAT,
    CredentialsBlock,
    DaskAddress,
    OptionalCount,
    OptionalText,
    OutputFormat,
    StorageOptions,
    TableRows,
    TimeLimit,
    WaitSeconds,
    run_namer,
)
from content_selection.shell.progress_artifacts import artifact_progress, follower
from content_selection.shell.refusals import refusals_fail_the_run
from content_selection.shell.runners import Workers, check_dask_scheduler, dask_client, dispatch, watched_processes
from selection_core.errors import EXIT_IO_ERROR
from selection_crawl.job import CrawlJob
from selection_crawl.lease import DEFAULT_WAIT_SECONDS, CrawlLease
from selection_crawl.listing import SUMMARY_NAME
from selection_crawl.process import WarcProcessDied, crawl_warc_in_process, crawl_warc_on_dask
from selection_crawl.unit import (
    MAX_DEATHS,
    PROGRESS_SECONDS,
    PROGRESS_TOPIC,
    STORE_PATIENCE_SECONDS,
    WarcOutcome,
)
from selection_extraction import DEFAULT_TIME_LIMIT_SECONDS
from selection_extraction.own_process import STOP_GRACE_SECONDS
from selection_extraction.processes import available_cores
from selection_storage.stores.retries import patience

CRAWL_PROGRESS_ARTIFACT_KEY: Final[str] = "crawl-progress"
CRAWL_WARCS_ARTIFACT_KEY: Final[str] = "crawl-warcs"

#: Least seconds between two updates of the progress artifact and the table artifact while WARCs are done.
PUBLISH_INTERVAL_SECONDS: Final[float] = 5.0


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


def warc_workers(dask_address: str | None, workers: int | None) -> contextlib.AbstractContextManager[Workers]:
    """Where WARCs are done: each in a process of its own (:mod:`selection_crawl.process`), watched by a thread of a
    Dask worker or, without an address, of this process (``workers`` at once; None: one per core). A WARC whose
    process died or stalled raises ``WarcProcessDied``."""
    grace = STOP_GRACE_SECONDS + 2 * PROGRESS_SECONDS
    if dask_address:
        return dask_client(dask_address, crawl_warc_on_dask, PROGRESS_TOPIC, (WarcProcessDied,), grace)
    return watched_processes(crawl_warc_in_process, workers or available_cores(), (WarcProcessDied,), grace)


def dispatch_warcs(job: CrawlJob, workers: Workers, publisher: _Publisher, lease: CrawlLease) -> None:
    """Do the WARCs to do on ``workers`` (:func:`~content_selection.shell.runners.dispatch`); the pages they report
    go to ``publisher``, and the lease is checked, at least every :data:`PROGRESS_SECONDS`.

    A WARC whose worker died (or stalled) is sent again; :data:`~selection_crawl.unit.MAX_DEATHS` deaths in a row
    before it reports a page fail it here (later deaths are counted by its tries: docs/scaling.md)."""

    def on_tick() -> None:
        publisher.tick()
        lease.check()

    warcs = ((index, job.warc_job(index)) for index in job.todo)
    ends = dispatch(workers, warcs, max_deaths=MAX_DEATHS, every=PROGRESS_SECONDS, on_report=publisher.pages,
                    on_tick=on_tick)  # fmt: skip
    with contextlib.closing(ends):
        for index, future, deaths in ends:
            try:
                outcome = future.result()
            except workers.deaths as exc:
                outcome = WarcOutcome.failed(
                    f"{job.warcs[index].source}: its workers died {deaths} times in a row before a page was "
                    f"done ({type(exc).__name__}); run again to try it again",
                    EXIT_IO_ERROR,
                    tries=deaths,
                )
            except Exception as exc:  # noqa: BLE001 - one WARC's failure, in its line of crawl.json
                outcome = WarcOutcome.failed(f"{job.warcs[index].source}: {type(exc).__name__}: {exc}", EXIT_IO_ERROR)
            publisher(index, outcome)


@dataclass
class Snapshot:
    """Where a crawl run stands, as its progress bar shows it: WARCs finished of those to do, pages done (in
    finished WARCs and in those in flight), pages estimated in all, and seconds since the start."""

    finished: int
    total: int
    pages: int
    estimate: int
    seconds: float


class _Publisher:
    """What the run shows as WARCs are done: the progress artifact and the table of WARCs (failures first, then the
    latest done), each at most every :data:`PUBLISH_INTERVAL_SECONDS`; the log; and the follower of a process that
    runs the flow itself (its progress bar), given a :class:`Snapshot` and the WARC that ended, if one did."""

    def __init__(self, job: CrawlJob, max_rows: int) -> None:
        self.job = job
        self.max_rows = max_rows
        self.total = len(job.todo)
        self.finished = 0
        self.finished_pages = 0
        self.flying: dict[int, tuple[int, int]] = {}  # WARC index: (pages done, pages estimated)
        self.latest: deque[int] = deque(maxlen=max_rows)
        self.failed: list[int] = []
        self._published_at = self._tabled_at = float("-inf")
        self._changed = False
        self._ended = False  # a WARC ended since the table was last published
        description = f"WARCs of {job.listing} done in this run ({job.done_before} of {len(job.warcs)} done before)"
        self._percent = artifact_progress(CRAWL_PROGRESS_ARTIFACT_KEY, description)
        self._follower = follower(CRAWL_WARCS_ARTIFACT_KEY)
        self._started = time.monotonic()

    def snapshot(self) -> Snapshot:
        flying = sum(done for done, _ in self.flying.values())
        estimated = sum(estimate for _, estimate in self.flying.values())
        known = self.finished + len(self.flying)
        per_warc = (self.finished_pages + estimated) / known if known else 0.0
        waiting = self.total - known
        estimate = self.finished_pages + estimated + round(per_warc * waiting)
        return Snapshot(self.finished, self.total, self.finished_pages + flying, estimate,
                        time.monotonic() - self._started)  # fmt: skip

    def pages(self, index: int, done: int, estimate: int) -> None:
        """A worker's report: WARC ``index`` has ``done`` pages of about ``estimate``."""
        self.flying[index] = (done, estimate)
        self._changed = True

    def __call__(self, index: int, outcome: WarcOutcome) -> None:
        self.job.finish_warc(index, outcome)
        self.flying.pop(index, None)
        self.finished += 1
        self.finished_pages += outcome.pages
        self._changed = self._ended = True
        if outcome.state == "failed":
            self.failed.append(index)
            run_logger().warning("%s", outcome.reason)
        else:
            self.latest.append(index)
        if self._follower is not None:
            self._follower(self.snapshot(), outcome)

    def tick(self) -> None:
        """Show the pages reported since the last tick: the follower at once; the progress artifact, and the table
        once a WARC has ended, each at most every :data:`PUBLISH_INTERVAL_SECONDS`."""
        if not self._changed:
            return
        self._changed = False
        if self._follower is not None:
            self._follower(self.snapshot(), None)
        now = time.monotonic()
        if now - self._published_at >= PUBLISH_INTERVAL_SECONDS:
            self.publish_progress()
        if self._ended and now - self._tabled_at >= PUBLISH_INTERVAL_SECONDS:
            self.publish_table()

    def publish_progress(self) -> None:
        """Update the progress artifact: WARCs finished, and the share done of those in flight."""
        self._published_at = time.monotonic()
        if self._percent is not None and self.total:
            share = sum(min(1.0, done / estimate) for done, estimate in self.flying.values() if estimate)
            self._percent(round((self.finished + share) * 1000), self.total * 1000)

    def publish_table(self) -> None:
        self._tabled_at, self._ended = time.monotonic(), False
        if not self.max_rows:
            return
        shown = [*self.failed[: self.max_rows], *reversed(self.latest)][: self.max_rows]
        rows = []
        for index in shown:
            warc, outcome = self.job.warcs[index], self.job.outcome(index)
            assert outcome is not None
            rows.append(
                {  # the file name first, short columns next: the UI's table is as wide as its window
                    "warc": warc.source.rsplit("/", 1)[-1],
                    "state": outcome.state,
                    "pages": outcome.pages,
                    "articles": outcome.articles,
                    "errors": sum(outcome.errors.values()),
                    "seconds": outcome.seconds,
                    "reason": (outcome.reason or "").removeprefix(f"{warc.source}: "),  # the WARC is named
                    "output": warc.relative,
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
    **RUN_END_HOOKS,
)
@refusals_fail_the_run
def extract_crawl(
    listing: Annotated[str, Field(min_length=1)],
    output_prefix: Annotated[str, Field(min_length=1)],
    base: OptionalText = None,
    dask_address: DaskAddress = None,
    workers: OptionalCount = None,
    time_limit_seconds: TimeLimit = DEFAULT_TIME_LIMIT_SECONDS,
    wait_seconds: WaitSeconds = DEFAULT_WAIT_SECONDS,
    storage_options: StorageOptions = None,
    credentials_block: CredentialsBlock = None,
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
        base: What relative lines of the listing are under, e.g. `https://data.commoncrawl.org/` (`s3://commoncrawl/`
            inside AWS's us-east-1). Empty: every line is absolute.
        dask_address: A Dask scheduler, `tcp://HOST:PORT`: each WARC is done on a worker. Empty: local processes.
        workers: Local worker processes (without a Dask address). Empty or 0: one per core.
        time_limit_seconds: Seconds one extractor may spend on one page before it is stopped (TimeoutError).
        wait_seconds: While another run holds the prefix, seconds to wait for it to end or go stale (a crashed
            run's lease does after 2 minutes: the crash automation's re-run waits for it) before failing.
        storage_options: Options of the object store of `s3://`, `gs://`, `az://` paths (an endpoint, a region).
        credentials_block: A Prefect `Secret` block of the store's credentials, as in `select-content`.
        max_table_rows: Most rows of the `crawl-warcs` table artifact.
        output_format: `batch`: each WARC's selected batch (JSON Lines); `dataset`: Parquet, one row per article
            with the selected text, its id, URL, date, WARC and dump (the `dataset` extra).
    """
    logger = run_logger()
    storage_options = with_credentials(storage_options, credentials_block)
    if dask_address is not None:
        check_dask_scheduler(dask_address)
    with (
        patience(STORE_PATIENCE_SECONDS),  # entered first: the lease's first calls are tried again too
        CrawlLease.acquire(output_prefix, storage_options, flow_run.get_id(), wait_seconds, logger.info) as lease,
    ):
        lease.start_renewing()
        job = CrawlJob.plan(
            listing, output_prefix, base, time_limit_seconds, storage_options, output_format, held=lease.renew
        )
        job.fence = lease.fence
        where = f"the Dask cluster at {dask_address}" if dask_address else "local worker processes"
        logger.info(
            "%d WARCs listed, %d done before: doing %d on %s", len(job.warcs), job.done_before, len(job.todo), where
        )
        publisher = _Publisher(job, max_table_rows)
        job.write_summary()
        try:
            with warc_workers(dask_address, workers) as on:
                dispatch_warcs(job, on, publisher, lease)
        finally:
            if (held_at := lease.held_at()) is not None:
                job.close(held_at)
            else:
                logger.warning("crawl.json is not rewritten, nor the prefix swept: its lease is not this run's")
    publisher.publish_progress()  # the last update of both artifacts
    publisher.publish_table()
    summary = CrawlRunSummary(  # the totals it has no field for are left out
        listing=listing, output_prefix=output_prefix, summary_path=str(job.where(SUMMARY_NAME)), **job.totals()
    )
    logger.info(summary.one_line())
    job.check()
    return summary
