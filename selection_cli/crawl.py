"""``content-selection crawl``: the flow ``extract-crawl`` on a listing of web archives, with a progress bar."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from content_selection.shell.params import MAX_TIME_LIMIT_SECONDS, MAX_WAIT_SECONDS
from content_selection.shell.runners import TaskRunnerConfigError, check_dask_scheduler, resolve_task_runner
from selection_cli.arguments import (
    add_output_format,
    add_storage_options,
    check_output_format,
    command_line_path,
    seconds,
    storage_options,
    whole_number,
)
from selection_cli.environment import check_prefect_api, prepare_embedded_api
from selection_core.errors import EXIT_INTERRUPTED
from selection_extraction import DEFAULT_TIME_LIMIT_SECONDS


def add_crawl_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``crawl`` to ``parser``."""
    parser.add_argument(
        "listing",
        metavar="LISTING",
        help="a text file of WARCs, one per line (gzip when named .gz, as Common Crawl's warc.paths.gz), each an "
        "absolute URL or path or a key relative to --base; or a folder (a prefix) of WARCs",
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="PREFIX",
        help="the folder or prefix of the outputs: PREFIX/<the WARC's path, .warc.gz replaced by .jsonl, or by "
        ".parquet with --format dataset>, its record beside it, and the job's summary PREFIX/crawl.json",
    )
    parser.add_argument(
        "--base", metavar="URL", help="what relative lines are under (for Common Crawl: --base s3://commoncrawl/)"
    )
    parser.add_argument(
        "--dask-address",
        metavar="tcp://HOST:PORT",
        help="a Dask scheduler: each WARC is done on one of its workers (default: local worker processes)",
    )
    parser.add_argument(
        "--workers",
        type=whole_number(1, "must be at least 1, got {text!r}"),
        metavar="N",
        help="local worker processes, without --dask-address (default: one per CPU core)",
    )
    parser.add_argument(
        "--time-limit",
        type=seconds(MAX_TIME_LIMIT_SECONDS),
        default=DEFAULT_TIME_LIMIT_SECONDS,
        metavar="SECONDS",
        help=f"seconds one extractor may spend on one page (default: {DEFAULT_TIME_LIMIT_SECONDS:g})",
    )
    parser.add_argument(
        "--wait",
        type=seconds(MAX_WAIT_SECONDS),
        default=0.0,
        metavar="SECONDS",
        help="while another crawl holds the prefix, wait up to SECONDS for it to end or go stale (a crashed "
        "crawl's lease does after 2 minutes) instead of exiting 75 at once",
    )
    add_output_format(parser)
    add_storage_options(parser)
    return parser


class CrawlBar:
    """``\rcrawling 3/16 WARCs, 5120 of ~40000 pages, 12.3 pages/s, 52m10s left`` on a terminal, moving as the
    workers report pages; each failed WARC's reason on a line of its own (on any stream)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.last: Any = None  # the latest snapshot

    def __call__(self, now: Any, outcome: Any = None) -> None:
        self.last = now
        if outcome is not None and outcome.state == "failed":
            self.stream.write(("\r\033[K" if self.tty else "") + f"content-selection: {outcome.reason}\n")
        if self.tty:
            rate = now.pages / now.seconds if now.seconds > 0 else 0.0
            left = (now.estimate - now.pages) / rate if rate > 0 else 0.0
            minutes, rest = divmod(round(max(left, 0.0)), 60)
            line = (
                f"crawling {now.finished}/{now.total} WARCs, {now.pages} of ~{max(now.estimate, now.pages)} pages, "
                f"{rate:.1f} pages/s, {minutes}m{rest:02d}s left"
            )
            self.stream.write("\r\033[K" + line + ("\n" if now.finished >= now.total else ""))
        self.stream.flush()


@contextlib.contextmanager
def _terminated_as_ctrl_c() -> Iterator[None]:
    """SIGTERM (a service manager's stop, ``kill``) stops the crawl as Ctrl-C does: in this thread, cleanly."""

    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _checked_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The flow's parameters, once the options, the listing, the prefix's lease and the scheduler are checked."""
    from selection_crawl.lease import CrawlLease
    from selection_crawl.listing import read_listing
    from selection_crawl.unit import STORE_PATIENCE_SECONDS
    from selection_storage.stores.retries import patience

    check_output_format(args)
    if args.workers is not None and args.dask_address:
        raise TaskRunnerConfigError("--workers counts local processes: leave it out with --dask-address")
    resolve_task_runner("dask" if args.dask_address else "process", args.dask_address)  # the address's form
    options = storage_options(args)
    base = args.base if args.base is None or "://" in args.base else command_line_path(args.base)
    listing = command_line_path(args.listing)
    output = command_line_path(args.output)

    def waiting(line: str) -> None:
        print(f"content-selection: {line}", file=sys.stderr, flush=True)

    with patience(STORE_PATIENCE_SECONDS):  # a store that throttles or restarts is waited for, as by the crawl
        read_listing(listing, base, options, args.output_format)  # a relative line without --base is refused now
        CrawlLease.acquire(output, options, wait=args.wait, waiting=waiting).release()  # another crawl is refused now
    if args.dask_address:
        check_dask_scheduler(args.dask_address)
    return {
        "listing": listing,
        "output_prefix": output,
        "base": base,
        "dask_address": args.dask_address,
        "workers": args.workers,
        "time_limit_seconds": args.time_limit,
        "wait_seconds": args.wait,
        "storage_options": options,
        "output_format": args.output_format,
    }


def crawl_command(args: argparse.Namespace) -> int:
    """Run the flow ``extract-crawl``; the listing and the scheduler are checked before Prefect starts."""
    parameters = _checked_parameters(args)
    prepare_embedded_api()
    check_prefect_api()
    # The WARCs that fail are printed by the bar; Prefect's console shows errors only.
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "ERROR")

    from content_selection.flows.extract_crawl import CRAWL_WARCS_ARTIFACT_KEY, extract_crawl
    from content_selection.shell.progress_artifacts import follow_progress
    from selection_cli.console import errors_left_to_the_last_line

    bar = CrawlBar(sys.stderr)
    try:
        with errors_left_to_the_last_line(), follow_progress({CRAWL_WARCS_ARTIFACT_KEY: bar}), _terminated_as_ctrl_c():
            state = extract_crawl(**parameters, return_state=True)
    except KeyboardInterrupt:
        finished = f"{bar.last.finished} of the {bar.last.total}" if bar.last is not None else "none of the"
        print(
            f"\ncontent-selection: stopped: {finished} WARCs to do ended in this run, the others stopped where they "
            "were (their commits are kept); run the same command again to go on",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    summary = state.result()  # raises the error that failed the run: the command's last line
    print(
        f"WARCs: {summary.warcs} ({summary.done} done, {summary.done_before} of them before this run, "
        f"{summary.failed} failed)\npages: {summary.pages}\narticles: {summary.articles}\n"
        f"summary: {summary.summary_path}"
    )
    print(f"flow run: {state.state_details.flow_run_id}")
    return 0
