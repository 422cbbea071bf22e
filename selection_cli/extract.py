"""``content-selection extract`` and ``content-selection pipeline``: the extract step from a terminal.

No orchestrator: these call the extraction engine (:mod:`selection_extraction`)
and the selection core directly. The extractor libraries are imported only
when a command runs, so that adding these arguments to the main parser stays cheap.

* ``extract PAGES [-o BATCH]``: pages -> ``<pages>_extracted.json`` (beside the
  folder or manifest) or ``BATCH``.
* ``pipeline PAGES [--extracted BATCH] [-o OUTPUT] [--report PATH]``: extract,
  then select: ``<pages>_extracted.json`` and ``<pages>_extracted_selected.json``
  (the selection's own default name for its input), or the given paths. Neither
  step holds the batch: the extraction streams its articles to disk, and the
  selection runs in chunks (:func:`selection_storage.select_file_in_chunks`, the
  same bytes as ``select``).

Every path is checked before the first page is read. Errors are the project's
typed errors (:mod:`selection_core.errors`): the main command prints them as
one line and exits with their status (65 for a bad input or a refused path,
74 for an I/O error, 1 when the extractor libraries are missing). Run
standalone, :func:`extract_main` / :func:`pipeline_main` do the same.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from selection_cli.environment import apply_kernel_setting
from selection_cli.progress import ProgressBar
from selection_cli.select import print_selection
from selection_core.errors import SelectionError
from selection_core.evidence import counts_text
from selection_extraction import (
    DEFAULT_TIME_LIMIT_SECONDS,
    ExtractionSettings,
    extract_to_file,
    extracted_path,
    find_pages,
)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "pages",
        metavar="PAGES",
        help="a folder of .html/.htm/.html.gz pages and .warc/.warc.gz web archives (searched recursively), "
        'a WARC file, or a JSON Lines manifest of {"id", "url", "path"} entries',
    )
    parser.add_argument(
        "--time-limit",
        type=_positive_float,
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
        "-o", "--output", metavar="BATCH", help="batch file to write (default: <PAGES>_extracted.json beside PAGES)"
    )
    return parser


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``pipeline`` to ``parser`` (the main CLI's subparser)."""
    _add_common(parser)
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


def format_extraction(stats: Any, output: Any, warc_records: dict[str, int] | None = None) -> str:
    """The lines printed after an extraction (with the WARC records by kind when the input had web archives)."""
    errors = counts_text(stats.errors)
    timeouts = sum(stats.timeouts.values())
    records = f"WARC records: {counts_text(warc_records)}\n" if warc_records else ""
    return (
        f"{records}pages: {stats.pages} ({stats.unreadable_pages} unreadable)\n"
        f"errors: {errors}" + (f" ({timeouts} timeouts)" if timeouts else "") + f"\nextracted: {output}"
    )


def _print_run(run: Any) -> None:
    print(format_extraction(run.result.stats, run.output_path, run.result.doc["extraction"].get("warc_records")))


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


def pipeline_command(args: argparse.Namespace) -> int:
    """Run ``pipeline`` with parsed arguments: extract, then select; returns 0, raises typed errors.

    Every output path (extracted batch, selected batch, report) is checked
    before the first page is read.
    """
    from selection_storage import select_file_in_chunks
    from selection_storage.paths import refuse_report_on_output, resolve_output_path

    extracted_arg = getattr(args, "extracted", None)
    output_arg = getattr(args, "output", None)
    report_arg = getattr(args, "report", None)
    page_set = find_pages(args.pages, scan_progress=_scan_bar())  # a bad input fails before anything else
    extracted = resolve_output_path(args.pages, extracted_arg or extracted_path(args.pages))
    selected = resolve_output_path(extracted, output_arg)
    report = resolve_output_path(extracted, report_arg) if report_arg else None
    refuse_report_on_output(report, selected, "choose another --report")

    run = extract_to_file(args.pages, extracted, _settings(args), progress=_pages_bar(), page_set=page_set)
    _print_run(run)
    # In chunks, so that the selection does not hold the batch either (the same bytes as `select`).
    result = select_file_in_chunks(run.output_path, selected, report)
    print_selection(result.summary, result.output_path, result.report_path)
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
