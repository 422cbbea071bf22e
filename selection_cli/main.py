"""The ``content-selection`` command: the parser of every subcommand, and the one error policy."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from selection_cli.environment import apply_kernel_setting
from selection_cli.explain import add_explain_arguments, explain_command
from selection_cli.extract import add_extract_arguments, add_pipeline_arguments, extract_command, pipeline_command
from selection_cli.run import add_run_arguments, run_command
from selection_cli.select import add_select_arguments, select_command
from selection_cli.serve import add_automations_arguments, add_serve_arguments, automations_command, serve_command
from selection_core import __version__
from selection_core.errors import EXIT_INTERNAL, SelectionError

COMMAND_HELP = {
    "select": "run the selection core on one batch file (no orchestrator)",
    "run": "run the Prefect flow select-content on one batch file",
    "extract": "extract pages with trafilatura, newspaper4k and readability into a batch",
    "pipeline": "extract pages, then select (the flow extract-and-select)",
    "serve": "serve the deployments of the selection and the extraction from this process",
    "explain": "explain one article's decision, in words",
    "automations": "create or update the automations that find dead runs and run them again (serve does it too)",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``content-selection`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="content-selection",
        description="Pick, for every article, the extractor text that best covers what the extractors agree on.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for name, add_arguments, command in (
        ("select", add_select_arguments, select_command),
        ("run", add_run_arguments, run_command),
        ("extract", add_extract_arguments, extract_command),
        ("pipeline", add_pipeline_arguments, pipeline_command),
        ("serve", add_serve_arguments, serve_command),
        ("explain", add_explain_arguments, explain_command),
        ("automations", add_automations_arguments, automations_command),
    ):
        add_arguments(sub.add_parser(name, help=COMMAND_HELP[name])).set_defaults(func=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``content-selection``; returns the exit status."""
    apply_kernel_setting()
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
