"""The ``content-selection`` command: the table of subcommands, and the one error policy.

A subcommand's module is imported only when that subcommand runs: ``select`` loads the core and the
selection engine, never Prefect or the extractors, and a command whose extra is not installed says
which one in one line.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Final

from selection_cli.environment import apply_kernel_setting, release_large_buffers
from selection_core import __version__
from selection_core.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, SelectionError, missing_extra

#: Each subcommand: the module whose ``add_<name>_arguments`` and ``<name>_command`` run it, and its help.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "select": ("selection_cli.select", "run the selection core on one batch file (no orchestrator)"),
    "run": ("selection_cli.run", "run the Prefect flow select-content on one batch file"),
    "extract": ("selection_cli.extract", "extract pages with trafilatura, newspaper4k and readability into a batch"),
    "pipeline": ("selection_cli.extract", "extract pages, then select (the flow extract-and-select)"),
    "crawl": (
        "selection_cli.crawl",
        "extract and select every WARC of a crawl's listing, one output each, resumable (the flow extract-crawl)",
    ),
    "serve": ("selection_cli.serve", "serve the deployments of the selection and the extraction from this process"),
    "explain": ("selection_cli.explain", "explain one article's decision, in words"),
    "automations": (
        "selection_cli.serve",
        "create or update the automations that find dead runs and run them again (serve does it too)",
    ),
}


#: The extra each command that extracts needs (checked before anything runs; other extras when an option asks).
EXTRA_OF_COMMAND: Final[dict[str, str]] = {"extract": "extract", "pipeline": "extract", "crawl": "extract"}

#: The status of a command whose standard output was closed early (``... | head``), as ``cat``'s: 128 + SIGPIPE.
EXIT_BROKEN_PIPE: Final[int] = 141


def _command_named(argv: Sequence[str]) -> str | None:
    """The subcommand in ``argv``: its first word that is not an option (the top level takes no option values)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def _command_module(name: str):  # type: ignore[no-untyped-def]
    """The module that runs ``name``, once the extra it needs is found installed."""
    if name in EXTRA_OF_COMMAND:
        from selection_extraction.extractors import require_extra  # only a command that extracts loads the engine

        require_extra(EXTRA_OF_COMMAND[name], name)
    return importlib.import_module(COMMANDS[name][0])


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of ``content-selection``, with the arguments of the subcommand named in ``argv`` (if any)."""
    parser = argparse.ArgumentParser(
        prog="content-selection",
        description="Pick, for every article, the extractor text that best covers what the extractors agree on.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _command_named(argv)
    for name, (_, help_text) in COMMANDS.items():
        subparser = sub.add_parser(name, help=help_text)
        if name == chosen:
            module = _command_module(name)
            getattr(module, f"add_{name}_arguments")(subparser)
            subparser.set_defaults(func=getattr(module, f"{name}_command"))
    return parser


def _quiet_broken_pipe() -> int:
    """Standard output was closed by its reader: end as ``cat`` does, without a word (and without Python's
    'Exception ignored' when it flushes stdout at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``content-selection``; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    apply_kernel_setting()
    release_large_buffers()
    try:
        args = build_parser(argv).parse_args(argv)
        return int(args.func(args))
    except SelectionError as exc:
        print(f"content-selection: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("content-selection: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except ModuleNotFoundError as exc:
        error = missing_extra(_command_named(argv) or "this command", exc.name)
        if error is None:
            return _internal_error(exc)
        print(f"content-selection: error: {error}", file=sys.stderr)
        return error.exit_code
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: BaseException) -> int:
    """A bug: still one line, and a way to get the details."""
    print(
        f"content-selection: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}; "
        "please report it with the input that caused it",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
