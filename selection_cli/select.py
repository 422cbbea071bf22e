"""``content-selection select``: the selection core on one batch file, no orchestrator."""

from __future__ import annotations

import argparse
import sys

from selection_cli.arguments import add_output_format, add_storage_options, storage_options
from selection_cli.progress import ProgressBar
from selection_core.batch import Summary
from selection_core.evidence import counts_text


def add_select_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``select`` to ``parser``."""
    parser.add_argument(
        "input",
        metavar="INPUT",
        help='batch file or object URL (s3://...): JSON, {"articles": [...]}, or JSON Lines (*.jsonl)',
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="output file, in the input's format (default: <input stem>_selected.json, or .jsonl, beside the input; "
        "<input stem>_selected.parquet with --format dataset)",
    )
    parser.add_argument("--report", metavar="PATH", help="also write one JSON explanation per article (JSON Lines)")
    add_output_format(parser)
    add_storage_options(parser)
    return parser


def format_summary(summary: Summary) -> str:
    """The short summary printed after a selection (by ``select`` and ``pipeline``)."""
    extractors = counts_text(summary.by_extractor)
    reasons = counts_text({k: v for k, v in summary.by_reason.items() if v})
    return f"articles: {summary.articles}\nselected: {extractors}\nreasons: {reasons or '-'}"


def select_command(args: argparse.Namespace) -> int:
    """Run ``select``; returns 0, raises the project's typed errors."""
    from selection_engine import select_file

    result = select_file(  # a dataset without pyarrow is refused before the input is read
        args.input,
        args.output,
        args.report,
        storage_options=storage_options(args),
        progress=ProgressBar(sys.stderr),
        output_format=args.output_format,
    )
    print(format_summary(result.summary))
    print(f"output: {result.output_path}")
    if result.report_path is not None:
        print(f"report: {result.report_path}")
    return 0
