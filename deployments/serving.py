"""How ``serve`` serves the stage: each run a fork of a fork server that has imported Prefect and the stage once,
rather than a new interpreter that imports them again (why: ``docs/reliability.md``)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import types
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from content_selection.shell.runners import forkserver_context

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment
    from prefect.flows import Flow


def start_runs_as_forks(modules: Iterable[str]) -> None:
    """From now on, the flow runs this process serves start as forks of a fork server that has imported Prefect's
    engine and ``modules`` (the served flows' modules); the fork server starts now. Where there is no fork server
    (not Linux or macOS), nothing changes.

    Prefect names ``prefect.runner._starter_direct.run_flow_in_subprocess`` as the reference to replace to change how
    runs start; it is replaced by Prefect's own function run under the fork server's context, so every other step
    (the run's environment, settings, signals, control channel) stays Prefect's."""
    import prefect.flow_engine as engine
    import prefect.runner._starter_direct as starter

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    context = forkserver_context("prefect.flow_engine", *modules)
    multiprocessing.forkserver.ensure_running()  # the imports are paid now, not by the first run
    spawn = types.SimpleNamespace(get_context=lambda method: context)
    prefect_start = engine.run_flow_in_subprocess

    def run_flow_in_fork(*args: Any, **kwargs: Any) -> Any:
        engine.multiprocessing = spawn  # type: ignore[assignment] - the one use: get_context("spawn")
        try:
            return prefect_start(*args, **kwargs)
        finally:
            engine.multiprocessing = multiprocessing

    starter.run_flow_in_subprocess = run_flow_in_fork  # type: ignore[assignment]


#: Seconds between two of ``serve``'s questions to the server for runs to start (Prefect's default: 10).
POLL_SECONDS: Final[int] = 2


def poll_seconds() -> int:
    """How often ``serve`` polls for runs: ``PREFECT_RUNNER_POLL_FREQUENCY`` if set, else :data:`POLL_SECONDS`."""
    text = os.environ.get("PREFECT_RUNNER_POLL_FREQUENCY", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else POLL_SECONDS


def runner_limit(deployments: Sequence[RunnerDeployment]) -> int:
    """The most runs ``serve`` starts at once by default: what the deployments' concurrency limits let run at once,
    plus one run of each deployment without a limit (the manual ones; more of them wait their turn)."""
    return sum(deployment.concurrency_limit or 1 for deployment in deployments)


def serve_stage(
    deployments: Sequence[RunnerDeployment], flows: Sequence[Flow[..., Any]], limit: int | None, heartbeat_seconds: int
) -> None:
    """Serve ``deployments`` until stopped (SIGTERM or Ctrl-C end it quietly), as ``prefect.serve`` does, with three
    changes: each run starts as a fork (:func:`start_runs_as_forks`; the runner is given the flow of each deployment,
    one of ``flows``, by name), the runner polls every :func:`poll_seconds`, and it starts at most ``limit`` runs at
    once (None: :func:`runner_limit`)."""
    import asyncio

    from prefect.exceptions import TerminationSignal
    from prefect.runner import Runner
    from prefect.settings import PREFECT_RUNNER_POLL_FREQUENCY, temporary_settings

    by_name = {stage_flow.name: stage_flow for stage_flow in flows}
    start_runs_as_forks(sorted({stage_flow.fn.__module__ for stage_flow in flows}))
    poll = poll_seconds()
    with temporary_settings(updates={PREFECT_RUNNER_POLL_FREQUENCY: poll}):
        runner = Runner(limit=limit or runner_limit(deployments), heartbeat_seconds=heartbeat_seconds)
        for deployment in deployments:
            deployment_id = runner.add_deployment(deployment)
            # What Runner.add_flow does for a flow it is given: its runs start by run_flow_in_subprocess.
            runner._deployment_registry.register_flow(deployment_id, by_name[deployment.flow_name])
        names = ", ".join(f"{deployment.flow_name}/{deployment.name}" for deployment in deployments)
        print(f"serving {names}; each run a fork of the fork server, polling every {poll} s", flush=True)
        try:
            asyncio.run(runner.start())
        except (KeyboardInterrupt, TerminationSignal):
            pass
