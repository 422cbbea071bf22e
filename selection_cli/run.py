"""``content-selection run``: run the ``select-content`` flow on one batch from a terminal.

With ``PREFECT_API_URL`` unset, the run uses Prefect's embedded (ephemeral) API,
so it works on a fresh machine with nothing started; with it set, the run, its
logs and its artifacts appear in that server's UI. Prefect is imported only
when the command runs, so the rest of the CLI stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from flows.params import DEFAULT_MAX_TABLE_ROWS
from flows.runners import TaskRunnerName, resolve_task_runner
from selection_cli.console import after_the_run, leave_repeated_errors_to_the_last_line
from selection_cli.environment import apply_kernel_setting, prepare_embedded_api
from selection_core.errors import SelectionError, error_line
from selection_storage.engine import CHUNK_BYTES, MAX_CHUNK_BYTES

PROG = "content-selection run"


def add_run_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``run`` to ``parser`` (the main CLI's subparser)."""
    parser.add_argument("input", metavar="INPUT", help="the *_extracted.json (or .jsonl) batch to select from")
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write the selected batch (default: <stem>_selected.json, or .jsonl, beside INPUT)",
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
    return parser


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """A standalone parser for ``run``."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Run the select-content Prefect flow on one extracted batch "
        "(embedded Prefect API unless PREFECT_API_URL is set).",
    )
    return add_run_arguments(parser)


def run_main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m selection_cli.run INPUT [options]``; returns the exit status."""
    apply_kernel_setting()
    return run_command(build_parser().parse_args(argv))


def run_command(args: argparse.Namespace) -> int:
    """Run the flow with parsed ``run`` arguments; returns the exit status.

    Prints a one-line summary on stdout on success, and a one-line error on
    stderr otherwise, with the error's ``exit_code`` (65 invalid input or
    refused path, 74 I/O error, 1 anything else). Options missing from ``args``
    take their defaults.

    The paths and the input's layout are checked before Prefect is imported (see
    :func:`check_run_input`): a bad one is refused at once, in the words of
    ``content-selection select``, without starting the embedded server; an invalid
    article is refused by the run, on its last line.
    """
    output = getattr(args, "output", None)
    report = getattr(args, "report", None)
    max_rows = getattr(args, "max_rows", None)
    data_root = getattr(args, "data_root", None)
    task_runner = getattr(args, "task_runner", None)
    dask_address = getattr(args, "dask_address", None)
    chunk_size = getattr(args, "chunk_size", None)
    if max_rows is not None and max_rows < 0:
        print(f"{PROG}: error: --max-rows must be 0 or more", file=sys.stderr)
        return 2
    if chunk_size is not None and chunk_size < 1:
        print(f"{PROG}: error: --chunk-size must be 1 or more", file=sys.stderr)
        return 2
    parameters: dict[str, object] = {
        # Relative paths mean "from here" on a command line, whatever the data root.
        "input_path": os.path.abspath(args.input),
        "output_path": os.path.abspath(output) if output else None,
        "report_path": os.path.abspath(report) if report else None,
        "max_table_rows": DEFAULT_MAX_TABLE_ROWS if max_rows is None else max_rows,
        "data_root": data_root,
        "task_runner": task_runner,
        "dask_address": dask_address,
        "chunk_size": chunk_size,
    }
    try:
        resolve_task_runner(task_runner, dask_address)
        check_run_input(parameters)
    except SelectionError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code

    prepare_embedded_api()

    from flows.select_content import select_content  # Prefect is imported only here

    handlers = leave_repeated_errors_to_the_last_line()
    try:
        summary = select_content(**parameters)
    except Exception as exc:  # noqa: BLE001 - reported as one line, never a traceback
        after_the_run(handlers)
        print(f"{PROG}: error: {error_line(exc)}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 1))
    after_the_run(handlers)
    print(summary.one_line())
    return 0


def check_run_input(parameters: dict[str, object]) -> None:
    """Refuse, before Prefect starts, what the flow would refuse first: a path outside the
    data root or otherwise refused, and an input that cannot be read or whose layout is not a batch's.

    The same checks as the flow's (``check-paths``, then the first pass over the
    batch) and as ``content-selection select`` (the paths first, then the input), so
    the message is the same words. The first pass (:func:`selection_storage.engine.plan_batch`)
    reads the file once, block by block, without holding it: the envelope is
    validated and the articles delimited, not parsed. An invalid article is found
    by the run, which says so on its last line. A transient read error is left to
    the run, which retries it.

    Raises:
        SelectionError: what the flow would end Failed with (``UnsafePathError``,
            ``OutputPathError``, ``InvalidBatchError``).
    """
    from selection_core.errors import ReadError
    from selection_storage.engine import plan_batch
    from selection_storage.paths import resolve_run_paths

    paths = resolve_run_paths(
        str(parameters["input_path"]),
        _text(parameters["output_path"]),
        _text(parameters["report_path"]),
        _text(parameters["data_root"]),
        option="--data-root",
    )
    try:
        plan_batch(paths.input)
    except ReadError:
        pass  # may be cured by the run's retries


def _text(value: object) -> str | None:
    return None if value is None else str(value)


if __name__ == "__main__":
    raise SystemExit(run_main())
