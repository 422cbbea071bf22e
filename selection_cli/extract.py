"""``content-selection extract`` (the engine, no orchestrator) and ``pipeline`` (the flow ``extract-and-select``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

from content_selection.shell.params import MAX_TIME_LIMIT_SECONDS
from content_selection.shell.runners import check_dask_scheduler, resolve_task_runner
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
from selection_cli.progress import ProgressBar
from selection_cli.select import format_summary
from selection_core.evidence import counts_text
from selection_extraction import (
    DEFAULT_TIME_LIMIT_SECONDS,
    ExtractionSettings,
    check_pipeline_paths,
    extract_to_file,
    find_pages,
    record_path,
)


def _add_common(parser: argparse.ArgumentParser, most_seconds: float | None = None) -> None:
    parser.add_argument(
        "pages",
        metavar="PAGES",
        help="a folder of .html/.htm/.html.gz pages and .warc/.warc.gz web archives (searched recursively), "
        'a WARC file, or a JSON Lines manifest of {"id", "url", "path"} entries; each may be a URL in a store '
        "(s3://BUCKET/PREFIX: a prefix is a folder)",
    )
    parser.add_argument(
        "--time-limit",
        type=seconds(most_seconds),
        default=DEFAULT_TIME_LIMIT_SECONDS,
        metavar="SECONDS",
        help="seconds one extractor may spend on one page before it is stopped "
        f"(default: {DEFAULT_TIME_LIMIT_SECONDS:g})",
    )
    parser.add_argument(
        "--workers",
        type=whole_number(1, "must be at least 1, got {text!r}"),
        default=None,
        metavar="N",
        help="worker processes (default: one per CPU core)",
    )


def add_extract_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``extract`` to ``parser``."""
    _add_common(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="BATCH",
        help="batch file to write (default: <PAGES>_extracted.json beside PAGES); a name ending in .jsonl "
        "writes JSON Lines, one article per line, and how it was made in <stem>.extraction.json beside it",
    )
    add_storage_options(parser)
    return parser


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``pipeline`` to ``parser``."""
    _add_common(parser, MAX_TIME_LIMIT_SECONDS)  # the flow's bound
    parser.add_argument(
        "--extracted",
        metavar="BATCH",
        help="extracted batch to write (default: <PAGES>_extracted.json beside PAGES)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="selected batch to write (default: <extracted stem>_selected.json beside the extracted batch; "
        "<extracted stem>_selected.parquet with --format dataset)",
    )
    parser.add_argument(
        "--report", metavar="PATH", help="also write the selection's explanation per article (JSON Lines)"
    )
    parser.add_argument(
        "--data-root",
        metavar="DIR",
        help="refuse paths that resolve outside DIR (default: $CONTENT_SELECTION_DATA_ROOT, if set)",
    )
    add_output_format(parser)
    add_storage_options(parser)
    return parser


def _pages_bar() -> ProgressBar:
    return ProgressBar(sys.stderr, "extracting", width=0, min_total=1, unit="pages")


def format_extraction(pages: int, counts: Any, output: Any, warc_records: Mapping[str, int] | None) -> str:
    """The lines printed after an extraction; ``counts`` has ``unreadable_pages``, ``errors`` and ``timeouts``."""
    timed_out = sum(counts.timeouts.values())
    records = f"WARC records: {counts_text(warc_records)}\n" if warc_records else ""
    timeouts = f" ({timed_out} timeouts)" if timed_out else ""
    pages_line = f"pages: {pages} ({counts.unreadable_pages} unreadable)"
    return f"{records}{pages_line}\nerrors: {counts_text(counts.errors)}{timeouts}\nextracted: {output}"


def extract_command(args: argparse.Namespace) -> int:
    from selection_storage.stores import location

    options = storage_options(args)
    pages = location(args.pages, options, "pages")
    output = None if args.output is None else location(args.output, options, "output")
    page_set = find_pages(pages, label=args.pages)
    settings = ExtractionSettings(time_limit_seconds=args.time_limit, workers=args.workers)
    run = extract_to_file(pages, output, settings, progress=_pages_bar(), page_set=page_set)
    stats = run.result.stats
    warc_records = run.result.doc["extraction"].get("warc_records")
    print(format_extraction(stats.pages, stats, run.output_path, warc_records))
    record = record_path(run.output_path)
    if record is not None:
        print(f"record: {record}")
    return 0


def format_pipeline(summary: Any) -> str:
    """The lines printed after a ``pipeline`` run: those of ``extract``, then those of ``select``."""
    extraction = format_extraction(summary.articles, summary, summary.extracted_path, summary.warc_records)
    selection = format_summary(summary)  # a PipelineRunSummary has the fields it reads
    report = f"\nreport: {summary.report_path}" if summary.report_path is not None else ""
    return f"{extraction}\n{selection}\noutput: {summary.output_path}{report}"


def pipeline_command(args: argparse.Namespace) -> int:
    """Run the flow ``extract-and-select``; every path is checked, and that PAGES exists, before Prefect starts."""
    from selection_storage.paths import configured_data_root

    check_output_format(args)
    _, address = resolve_task_runner(None, None)  # a bad CONTENT_SELECTION_TASK_RUNNER is refused now, in one line
    if address is not None:
        check_dask_scheduler(address)
    # Without a data root, PAGES as typed: the batch records the input as given (the bytes of `extract PAGES`).
    pages = args.pages if configured_data_root(args.data_root) is None else command_line_path(args.pages)
    parameters: dict[str, Any] = {
        "pages": pages,
        "extracted_path": command_line_path(args.extracted),
        "output_path": command_line_path(args.output),
        "report_path": command_line_path(args.report),
        "time_limit_seconds": args.time_limit,
        "workers": args.workers,
        "data_root": args.data_root,
        "storage_options": storage_options(args),
        "output_format": args.output_format,
    }
    paths = (parameters["extracted_path"], parameters["output_path"], parameters["report_path"])
    options = parameters["storage_options"]
    check_pipeline_paths(pages, *paths, args.data_root, "--data-root", options, args.output_format)

    prepare_embedded_api()
    check_prefect_api()
    # The INFO lines of Prefect's console handler would tear the progress bars apart; the API gets them all.
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")

    from content_selection.flows.extract_and_select import extract_and_select  # Prefect is imported only here
    from content_selection.shell.progress_artifacts import follow_progress
    from content_selection.tasks.selection import PROGRESS_ARTIFACT_KEY
    from selection_cli.console import errors_left_to_the_last_line
    from selection_extraction.artifacts import EXTRACTION_PROGRESS_ARTIFACT_KEY

    bars = {EXTRACTION_PROGRESS_ARTIFACT_KEY: _pages_bar(), PROGRESS_ARTIFACT_KEY: ProgressBar(sys.stderr)}
    with errors_left_to_the_last_line(), follow_progress(bars):
        state = extract_and_select(**parameters, return_state=True)
    summary = state.result()  # raises the error that failed the run: the command's last line
    print(format_pipeline(summary))
    print(f"flow run: {state.state_details.flow_run_id}")
    return 0
