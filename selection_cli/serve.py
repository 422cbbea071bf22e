"""``content-selection serve``: the stage's deployments, served from this process (needs ``PREFECT_API_URL``)."""

from __future__ import annotations

import argparse
import os
import sys

from content_selection.deployments.config import DEFAULT_CRON, DEFAULT_TIMEZONE
from selection_cli.arguments import add_output_format, check_output_format, whole_number
from selection_cli.environment import check_prefect_api
from selection_storage.paths import DATA_ROOT_ENV, data_root_in_force

_AT_LEAST_ONE = "must be a whole number of at least 1, got {text!r}"
_positive = whole_number(1, _AT_LEAST_ONE, _AT_LEAST_ONE)


def add_serve_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the options of ``serve`` to ``parser``."""
    parser.add_argument(
        "--data-root",
        metavar="DIR",
        help=f"directory every batch path must resolve inside (default: ${DATA_ROOT_ENV}); "
        "required, because the triggered deployment takes paths from events",
    )
    parser.add_argument(
        "--directory",
        metavar="DIR",
        help="folder select-directory/scheduled scans for stale batches (default: the data root)",
    )
    parser.add_argument(
        "--inbox",
        metavar="DIR",
        help="folder extract-inbox/scheduled extracts new page sets from, inside the data root "
        "(default: <data root>/inbox)",
    )
    parser.add_argument(
        "--cron",
        default=DEFAULT_CRON,
        help=f"schedule of the scheduled selection and extraction (default: {DEFAULT_CRON!r})",
    )
    parser.add_argument(
        "--timezone", default=DEFAULT_TIMEZONE, help=f"time zone of --cron (default: {DEFAULT_TIMEZONE})"
    )
    parser.add_argument(
        "--limit",
        type=_positive,
        default=None,
        metavar="N",
        help="most flow runs this process runs at the same time (default: what the deployments' concurrency limits "
        "let run at once, plus one of each manual deployment)",
    )
    parser.add_argument(
        "--concurrency-limit",
        type=_positive,
        default=None,
        metavar="N",
        help="most runs of the triggered selection at once, on every process serving it; extra runs queue "
        "(default: this machine's cores)",
    )
    parser.add_argument(
        "--after-flow",
        metavar="NAME",
        help="also serve select-content/after-flow: select a batch when a run of the flow NAME completes "
        "(for an upstream flow that does not emit content-selection.batch.extracted)",
    )
    parser.add_argument(
        "--path-parameter",
        metavar="PARAM",
        help="with --after-flow: the parameter of that flow that holds the batch it wrote",
    )
    add_output_format(parser)  # the default of the deployments that select (a run may still choose)
    return parser


def serve_command(args: argparse.Namespace) -> int:
    """Serve until stopped; returns the exit status."""
    if (args.after_flow is None) != (args.path_parameter is None):
        _error("--after-flow NAME and --path-parameter PARAM go together; give both, or neither")
        return 2

    if not _api_url_set():
        return 2
    try:
        check_output_format(args)
        in_force = data_root_in_force(args.data_root, "--data-root")
        if in_force is not None and args.inbox:  # the extraction's outputs must be where the selection accepts them
            in_force.confine(args.inbox, "inbox")
    except Exception as exc:  # noqa: BLE001 - reported as one line
        _error(str(exc))
        return int(getattr(exc, "exit_code", 2))
    if in_force is None:
        _error(f"no data root; pass --data-root DIR or set {DATA_ROOT_ENV} (event paths are only accepted inside it)")
        return 2

    from content_selection.deployments.definitions import build_deployments, check_after_flow

    upstream = None
    if args.after_flow is not None:
        try:
            check_after_flow(args.after_flow, args.path_parameter)
        except ValueError as exc:
            _error(f"--after-flow/--path-parameter: {exc}")
            return 2
        upstream = (args.after_flow, args.path_parameter)
    cron, timezone = args.cron or DEFAULT_CRON, args.timezone or DEFAULT_TIMEZONE  # an empty one is the default
    try:
        deployments = build_deployments(
            data_root=str(in_force.path),
            directory=args.directory,
            inbox=args.inbox,
            cron=cron,
            timezone=timezone,
            after_flow=upstream,
            concurrency_limit=args.concurrency_limit,
            output_format=args.output_format,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        errors = getattr(exc, "errors", None)
        reason = errors()[0]["msg"] if callable(errors) and errors() else " ".join(str(exc).split())
        _error(f"invalid --cron {cron!r} or --timezone {timezone!r}: {reason}")
        return 2
    check_prefect_api(embedded_ok=False)  # the arguments first: they are refused without a server
    try:
        from content_selection.deployments.automations import HEARTBEAT_SECONDS, apply_automations
        from content_selection.deployments.serving import serve_stage

        for line in apply_automations():
            print(line, file=sys.stderr)
        os.environ[DATA_ROOT_ENV] = str(in_force.path)  # the served runs are subprocesses: they inherit it
        serve_stage(deployments, limit=args.limit, heartbeat_seconds=HEARTBEAT_SECONDS)
    except Exception as exc:  # noqa: BLE001 - e.g. the API cannot be reached; one line, no traceback
        text = " ".join(str(exc).split())
        _error(f"serving stopped: {type(exc).__name__}: {text} (is the server at PREFECT_API_URL running?)")
        return 1
    return 0


def add_automations_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``automations`` takes no options: it applies ``deployments/automations.yaml``."""
    return parser


def automations_command(args: argparse.Namespace) -> int:
    """Create or update the stage's automations on the server at ``PREFECT_API_URL`` (``serve`` does it too)."""
    if not _api_url_set("automations"):
        return 2
    check_prefect_api(embedded_ok=False)
    from content_selection.deployments.automations import apply_automations

    try:
        for line in apply_automations():
            print(line)
    except Exception as exc:  # noqa: BLE001 - e.g. the API cannot be reached; one line, no traceback
        _error(f"automations not applied: {type(exc).__name__}: {' '.join(str(exc).split())}", "automations")
        return 1
    return 0


def _api_url_set(command: str = "serve") -> bool:
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():
        _error(
            "PREFECT_API_URL is not set; start a server (prefect server start) and "
            "set PREFECT_API_URL=http://127.0.0.1:4200/api",
            command,
        )
        return False
    return True


def _error(message: str, command: str = "serve") -> None:
    print(f"content-selection {command}: error: {message}", file=sys.stderr)
