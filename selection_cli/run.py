"""``content-selection run``: the ``select-content`` flow on one batch, from a terminal."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from content_selection.shell.params import DEFAULT_MAX_TABLE_ROWS
from content_selection.shell.runners import TaskRunnerName, check_dask_scheduler, resolve_task_runner
from selection_cli.arguments import (
    add_output_format,
    add_storage_options,
    check_output_format,
    command_line_path,
    storage_options,
)
from selection_cli.console import errors_left_to_the_last_line
from selection_cli.environment import check_prefect_api, prepare_embedded_api
from selection_core.errors import ReadError, SelectionError, error_line
from selection_engine.engine import CHUNK_BYTES, MAX_CHUNK_BYTES, plan_batch
from selection_storage.paths import resolve_run_paths

PROG = "content-selection run"


def add_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``run`` to ``parser``."""
    parser.add_argument(
        "input", metavar="INPUT", help="the *_extracted.json (or .jsonl) batch to select from: a file or an object URL"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write the selected batch (default: <stem>_selected.json, or .jsonl, beside INPUT; "
        "<stem>_selected.parquet with --format dataset)",
    )
    parser.add_argument("--report", metavar="PATH", help="also write the per-article explanation as JSON Lines")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=None,
        metavar="N",
        help=f"rows of the selection-scores table artifact (default: {DEFAULT_MAX_TABLE_ROWS})",
    )
    parser.add_argument(
        "--data-root",
        metavar="DIR",
        help="refuse paths that resolve outside DIR (default: $CONTENT_SELECTION_DATA_ROOT, if set)",
    )
    parser.add_argument(
        "--task-runner",
        choices=[runner.value for runner in TaskRunnerName],
        default=None,
        help="where articles are scored: in this process, a process pool over the cores, or Dask "
        "(default: $CONTENT_SELECTION_TASK_RUNNER, else dask with --dask-address, else in-process); "
        "the output is the same bytes whichever",
    )
    parser.add_argument(
        "--dask-address",
        metavar="tcp://HOST:PORT",
        help="scheduler of a running Dask cluster (default: $CONTENT_SELECTION_DASK_ADDRESS; "
        "with neither, --task-runner dask starts a local cluster of 2 workers)",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help=f"most articles per chunk (default: chunks of at most {CHUNK_BYTES >> 20} MiB of input, one after the "
        f"other, in-process; about 4 chunks per worker, at most {MAX_CHUNK_BYTES >> 20} MiB each, on process or dask)",
    )
    add_output_format(parser)
    add_storage_options(parser)
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Run the flow; returns the exit status, an error said in one line on stderr."""
    if args.max_rows is not None and args.max_rows < 0:
        print(f"{PROG}: error: --max-rows must be 0 or more", file=sys.stderr)
        return 2
    if args.chunk_size is not None and args.chunk_size < 1:
        print(f"{PROG}: error: --chunk-size must be 1 or more", file=sys.stderr)
        return 2
    parameters: dict[str, Any] = {
        "input_path": command_line_path(args.input),
        "output_path": command_line_path(args.output),
        "report_path": command_line_path(args.report),
        "max_table_rows": DEFAULT_MAX_TABLE_ROWS if args.max_rows is None else args.max_rows,
        "data_root": args.data_root,
        "task_runner": args.task_runner,
        "dask_address": args.dask_address,
        "chunk_size": args.chunk_size,
        "storage_options": storage_options(args),
        "output_format": args.output_format,
    }
    try:
        check_output_format(args)
        _, address = resolve_task_runner(args.task_runner, args.dask_address)
        if address is not None:
            check_dask_scheduler(address)
        # What the flow would refuse first is refused now, in select's words, without starting Prefect:
        # a refused path, or a batch whose layout is not a batch's (the first pass, articles not parsed).
        output, report = parameters["output_path"], parameters["report_path"]
        paths = resolve_run_paths(
            parameters["input_path"],
            output,
            report,
            args.data_root,
            False,
            "--data-root",
            parameters["storage_options"],
            output_format=args.output_format,
        )
        with contextlib.suppress(ReadError):  # may be cured by the run's retries
            plan_batch(paths.input)  # the flow plans the batch again: a second first pass, not cached
    except SelectionError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code

    prepare_embedded_api()
    check_prefect_api()  # once, before the flow starts: an unreachable server is one line

    from content_selection.flows.select_content import select_content  # Prefect is imported only here

    try:
        with errors_left_to_the_last_line():
            summary = select_content(**parameters)
    except Exception as exc:  # noqa: BLE001 - reported as one line, never a traceback
        print(f"{PROG}: error: {error_line(exc)}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 1))
    print(summary.one_line())
    return 0
