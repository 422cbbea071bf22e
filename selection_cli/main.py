"""The ``content-selection`` command.

``select`` runs the core directly (no orchestrator). ``run`` and ``serve`` start
the Prefect stage; they import Prefect lazily so that ``select`` stays light.
Every error a user can cause ends in one line on stderr and a distinct exit
status (see ``selection_core.errors``); never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from selection_core import __version__
from selection_core.batch import Summary
from selection_core.errors import EXIT_INTERNAL, SelectionError

#: Batches at least this long get a progress bar (on a terminal only).
PROGRESS_MIN_ARTICLES = 1000


class ProgressBar:
    """A dependency-free progress bar on a terminal stream; silent elsewhere.

    The clock is only used to limit redraws; it never reaches a result.
    """

    def __init__(self, stream: TextIO, label: str = "selecting", width: int = 30) -> None:
        self.stream = stream
        self.label = label
        self.width = width
        self.enabled = stream.isatty()
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_ARTICLES:
            return
        now = time.monotonic()
        if done != total and now - self._last < 0.1:
            return
        self._last = now
        filled = self.width * done // total if total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        end = "\n" if done == total else ""
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}{end}")
        self.stream.flush()


def format_summary(summary: Summary) -> str:
    """The short summary printed after a run."""
    extractors = ", ".join(f"{k} {v}" for k, v in summary.by_extractor.items())
    reasons = ", ".join(f"{k} {v}" for k, v in summary.by_reason.items() if v)
    return f"articles: {summary.articles}\nselected: {extractors}\nreasons: {reasons or '-'}"


def _cmd_select(args: argparse.Namespace) -> int:
    from selection_storage.files import select_file

    result = select_file(args.input, args.output, args.report, ProgressBar(sys.stderr))
    print(format_summary(result.summary))
    print(f"output: {result.output_path}")
    if result.report_path is not None:
        print(f"report: {result.report_path}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from selection_cli.run import run_command  # Prefect is imported only here

    return int(run_command(args))


def _cmd_extract(args: argparse.Namespace) -> int:
    from selection_cli.extract import extract_command

    return int(extract_command(args))


def _cmd_pipeline(args: argparse.Namespace) -> int:
    from selection_cli.extract import pipeline_command

    return int(pipeline_command(args))


def _cmd_serve(args: argparse.Namespace) -> int:
    from deployments.serve import serve_command

    return int(serve_command(args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="content-selection",
        description="Pick, for every article, the extractor text that best covers what the extractors agree on.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("select", help="run the selection core on one batch file (no orchestrator)")
    p.add_argument("input", metavar="INPUT", help='batch JSON file: {"articles": [...]}')
    p.add_argument(
        "-o", "--output", metavar="PATH", help="output file (default: <input stem>_selected.json beside the input)"
    )
    p.add_argument("--report", metavar="PATH", help="also write one JSON explanation per article (JSON Lines)")
    p.set_defaults(func=_cmd_select)

    # The Prefect shells register their own arguments (their modules import Prefect
    # only when a command runs). A core-only install (no flows/) still has `select`.
    try:
        from selection_cli.run import add_run_arguments
    except ImportError:
        pass
    else:
        p = sub.add_parser("run", help="run the Prefect flow select-content on one batch file")
        add_run_arguments(p).set_defaults(func=_cmd_run)
    try:
        from selection_cli.extract import add_extract_arguments, add_pipeline_arguments
    except ImportError:
        pass
    else:
        p = sub.add_parser("extract", help="extract pages with trafilatura, newspaper4k and readability into a batch")
        add_extract_arguments(p).set_defaults(func=_cmd_extract)
        p = sub.add_parser("pipeline", help="extract pages, then select (the flow extract-and-select)")
        add_pipeline_arguments(p).set_defaults(func=_cmd_pipeline)
    try:
        from deployments.serve import add_serve_arguments
    except ImportError:
        pass
    else:
        p = sub.add_parser("serve", help="serve the manual, scheduled and triggered deployments from this process")
        add_serve_arguments(p).set_defaults(func=_cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except SelectionError as exc:
        print(f"content-selection: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("content-selection: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line, and a way to get the details
        print(
            f"content-selection: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}; "
            "please report it with the input that caused it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
