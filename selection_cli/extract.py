"""``content-selection extract`` and ``content-selection pipeline``: the extract step from a terminal.

* ``extract PAGES [-o BATCH]``: pages -> ``<pages>_extracted.json`` (beside the
  folder or manifest) or ``BATCH``; a ``BATCH`` named ``*.jsonl`` is JSON Lines,
  with its record beside it (:mod:`selection_extraction.batch`). No orchestrator:
  the extraction engine (:mod:`selection_extraction`) is called directly.
* ``pipeline PAGES [--extracted BATCH] [-o OUTPUT] [--report PATH]``: runs the
  Prefect flow ``extract-and-select`` (:mod:`flows.extract_and_select`), as ``run``
  runs ``select-content``: on Prefect's embedded API unless ``PREFECT_API_URL`` is
  set, so that with a server the run, its logs and its artifacts are in its UI.
  It writes ``<pages>_extracted.json`` and ``<pages>_extracted_selected.json``
  (the selection's own default name for its input), or the given paths, the same
  bytes as ``extract`` then ``select``. Neither step holds the batch: the flow's
  extraction streams its articles to disk, and its selection runs in chunks.

Every path is checked before the first page is read; ``pipeline`` checks them,
and that PAGES exists, before Prefect is even imported
(:func:`selection_extraction.paths.check_pipeline_paths`, what the flow's
``check-extract-paths`` and ``check-paths`` check), so a bad path costs no server
start. Errors are the project's typed errors (:mod:`selection_core.errors`): the
main command prints them as one line and exits with their status (65 for a bad
input or a refused path, 74 for an I/O error, 1 when the extractor libraries are
missing, 2 for a bad setting). Run standalone, :func:`extract_main` /
:func:`pipeline_main` do the same.

**The terminal of** ``pipeline``: the progress bars of ``extract`` and ``select``
on stderr (on a terminal only), fed by the flow's own progress artifacts
(:func:`tasks.progress.follow_progress`), then the lines ``extract`` and
``select`` print, and the flow run's id. Prefect's console handler shows
warnings and errors only (``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL``, default
``WARNING`` here: its INFO lines would tear the bars apart), and, as for ``run``,
not the error lines that the command's last line says anyway (a refusal is one
line; a bug keeps its traceback). Every log line still goes to the API, so the
run's page in the UI has them all. Set ``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=INFO``
to see them on the terminal too.
The WARC scan before the extraction has no bar in the flow (it reads about
200 MB a second; see ``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flows.params import MAX_TIME_LIMIT_SECONDS
from flows.runners import resolve_task_runner
from selection_cli.arguments import whole_number
from selection_cli.environment import apply_kernel_setting, prepare_embedded_api
from selection_cli.progress import ProgressBar
from selection_core.batch import Summary
from selection_core.errors import SelectionError
from selection_core.evidence import counts_text
from selection_extraction import (
    DEFAULT_TIME_LIMIT_SECONDS,
    ExtractionSettings,
    check_pipeline_paths,
    extract_to_file,
    find_pages,
    record_path,
)


def _seconds(most: float | None = None) -> Callable[[str], float]:
    """The argument type of ``--time-limit``: a positive number of seconds (at most ``most``)."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:g} seconds, got {text!r}")
        return value

    return seconds


#: A count of workers: 1 or more.
_positive_int = whole_number(1, "must be at least 1, got {text!r}")


def _add_common(parser: argparse.ArgumentParser, most_seconds: float | None = None) -> None:
    parser.add_argument(
        "pages",
        metavar="PAGES",
        help="a folder of .html/.htm/.html.gz pages and .warc/.warc.gz web archives (searched recursively), "
        'a WARC file, or a JSON Lines manifest of {"id", "url", "path"} entries',
    )
    parser.add_argument(
        "--time-limit",
        type=_seconds(most_seconds),
        default=DEFAULT_TIME_LIMIT_SECONDS,
        metavar="SECONDS",
        help="seconds one extractor may spend on one page before it is stopped "
        f"(default: {DEFAULT_TIME_LIMIT_SECONDS:g})",
    )
    parser.add_argument(
        "--workers", type=_positive_int, default=None, metavar="N", help="worker processes (default: one per CPU core)"
    )


def add_extract_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``extract`` to ``parser`` (the main CLI's subparser)."""
    _add_common(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="BATCH",
        help="batch file to write (default: <PAGES>_extracted.json beside PAGES); a name ending in .jsonl "
        "writes JSON Lines, one article per line, and how it was made in <stem>.extraction.json beside it",
    )
    return parser


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``pipeline`` to ``parser`` (the main CLI's subparser)."""
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
        help="selected batch to write (default: <extracted stem>_selected.json beside the extracted batch)",
    )
    parser.add_argument(
        "--report", metavar="PATH", help="also write the selection's explanation per article (JSON Lines)"
    )
    parser.add_argument(
        "--data-root",
        metavar="DIR",
        help="refuse paths that resolve outside DIR (default: $CONTENT_SELECTION_DATA_ROOT, if set)",
    )
    return parser


def _pages_bar() -> ProgressBar:
    """``extracting done/total pages`` on a terminal (stderr); silent elsewhere."""
    return ProgressBar(sys.stderr, "extracting", width=0, min_total=1, unit="pages")


def _scan_bar() -> Callable[[int, int, int], None]:
    """``reading WARC done/total MB, N records`` on a terminal (stderr) while web archives are scanned."""
    bar = ProgressBar(sys.stderr, "reading WARC", width=0, min_total=1, unit="MB")

    def report(done: int, total: int, records: int) -> None:
        bar.unit = f"MB, {records} records"
        total_mb = max(1, -(-total // 1_000_000))  # rounded up, so that the end shows as done/done
        bar(total_mb if done >= total else min(done // 1_000_000, total_mb - 1), total_mb)

    return report


def _settings(args: argparse.Namespace) -> ExtractionSettings:
    return ExtractionSettings(
        time_limit_seconds=getattr(args, "time_limit", None) or DEFAULT_TIME_LIMIT_SECONDS,
        workers=getattr(args, "workers", None),
    )


def format_extraction(
    pages: int,
    unreadable_pages: int,
    errors: Mapping[str, int],
    timeouts: Mapping[str, int],
    output: Any,
    warc_records: Mapping[str, int] | None = None,
) -> str:
    """The lines printed after an extraction (with the WARC records by kind when the input had web archives)."""
    timed_out = sum(timeouts.values())
    records = f"WARC records: {counts_text(warc_records)}\n" if warc_records else ""
    return (
        f"{records}pages: {pages} ({unreadable_pages} unreadable)\n"
        f"errors: {counts_text(errors)}" + (f" ({timed_out} timeouts)" if timed_out else "") + f"\nextracted: {output}"
    )


def _print_run(run: Any) -> None:
    stats = run.result.stats
    warc_records = run.result.doc["extraction"].get("warc_records")
    print(
        format_extraction(
            stats.pages, stats.unreadable_pages, stats.errors, stats.timeouts, run.output_path, warc_records
        )
    )
    record = record_path(run.output_path)
    if record is not None:
        print(f"record: {record}")


def extract_command(args: argparse.Namespace) -> int:
    """Run ``extract`` with parsed arguments; returns 0, raises the project's typed errors.

    Raises:
        InvalidPagesError: the pages input cannot be used (exit 65).
        OutputPathError: the output path is refused (exit 65).
        WriteError: writing failed (exit 74).
        ExtractorsUnavailableError: the extractor libraries are missing (exit 1).
    """
    page_set = find_pages(args.pages, scan_progress=_scan_bar())
    output = getattr(args, "output", None)
    run = extract_to_file(args.pages, output, _settings(args), progress=_pages_bar(), page_set=page_set)
    _print_run(run)
    return 0


def _pipeline_parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The flow's parameters from ``pipeline``'s arguments, every path checked (no Prefect, no page read).

    Relative paths mean "from here" on a command line: they are made absolute,
    except PAGES without a data root, passed as typed because the batch records
    the input as given (the same bytes as ``extract PAGES``); under a data root
    the flow would take a relative path from the root.

    Raises:
        InvalidPagesError, UnsafePathError, OutputPathError: a path is refused (exit 65).
        TaskRunnerConfigError: the task runner settings are not usable (exit 2).
    """
    from selection_storage.paths import configured_data_root

    def absolute(path: str | None) -> str | None:
        return os.path.abspath(path) if path else None

    data_root = getattr(args, "data_root", None)
    resolve_task_runner(None, None)  # refuses a bad CONTENT_SELECTION_TASK_RUNNER now, in one line
    pages = args.pages if configured_data_root(data_root) is None else os.path.abspath(args.pages)
    parameters: dict[str, Any] = {
        "pages": pages,
        "extracted_path": absolute(getattr(args, "extracted", None)),
        "output_path": absolute(getattr(args, "output", None)),
        "report_path": absolute(getattr(args, "report", None)),
        "time_limit_seconds": getattr(args, "time_limit", None) or DEFAULT_TIME_LIMIT_SECONDS,
        "workers": getattr(args, "workers", None),
        "data_root": data_root,
    }
    check_pipeline_paths(
        pages,
        parameters["extracted_path"],
        parameters["output_path"],
        parameters["report_path"],
        data_root,
        option="--data-root",
    )
    return parameters


def format_pipeline(summary: Any) -> str:
    """The lines printed after a ``pipeline`` run: those of ``extract``, then those of ``select``."""
    from selection_cli.select import format_summary

    extraction = format_extraction(
        summary.articles,
        summary.unreadable_pages,
        summary.errors,
        summary.timeouts,
        summary.extracted_path,
        summary.warc_records,
    )
    selection = format_summary(Summary(summary.articles, summary.by_extractor, summary.by_reason, summary.by_pool))
    report = f"\nreport: {summary.report_path}" if summary.report_path is not None else ""
    return f"{extraction}\n{selection}\noutput: {summary.output_path}{report}"


def pipeline_command(args: argparse.Namespace) -> int:
    """Run ``pipeline`` with parsed arguments: the flow ``extract-and-select``; returns 0, raises typed errors.

    Every path (pages, extracted batch, selected batch, report) is checked
    before Prefect starts, and again by the flow before the first page is read.

    Raises:
        SelectionError: a refused path or input (before Prefect starts), or the
            error that failed the flow run.
    """
    parameters = _pipeline_parameters(args)
    prepare_embedded_api()
    # The INFO lines of Prefect's console handler would tear the progress bars apart; the API gets them all.
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")

    from flows.extract_and_select import extract_and_select  # Prefect is imported only here
    from selection_cli.console import after_the_run, leave_repeated_errors_to_the_last_line
    from selection_extraction.artifacts import EXTRACTION_PROGRESS_ARTIFACT_KEY
    from tasks.progress import follow_progress
    from tasks.select import PROGRESS_ARTIFACT_KEY

    bars = {
        EXTRACTION_PROGRESS_ARTIFACT_KEY: _pages_bar(),
        PROGRESS_ARTIFACT_KEY: ProgressBar(sys.stderr),  # select's bar
    }
    # As `run` does: Prefect's console leaves out the error lines the command's last line says anyway.
    handlers = leave_repeated_errors_to_the_last_line()
    try:
        with follow_progress(bars):
            state = extract_and_select(**parameters, return_state=True)
    finally:
        after_the_run(handlers)
    summary = state.result()  # raises the error that failed the run: the command's last line
    print(format_pipeline(summary))
    print(f"flow run: {state.state_details.flow_run_id}")
    return 0


def _standalone(
    prog: str,
    add: Callable[[argparse.ArgumentParser], argparse.ArgumentParser],
    command: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None,
) -> int:
    apply_kernel_setting()
    parser = add(argparse.ArgumentParser(prog=prog))
    args = parser.parse_args(argv)
    try:
        return command(args)
    except SelectionError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; nothing was written", file=sys.stderr)
        return 130


def extract_main(argv: Sequence[str] | None = None) -> int:
    """``python -m selection_cli.extract PAGES [-o BATCH]``: ``extract`` without the main CLI."""
    return _standalone("content-selection extract", add_extract_arguments, extract_command, argv)


def pipeline_main(argv: Sequence[str] | None = None) -> int:
    """``pipeline`` without the main CLI."""
    return _standalone("content-selection pipeline", add_pipeline_arguments, pipeline_command, argv)


if __name__ == "__main__":
    raise SystemExit(extract_main())
