"""How ``serve`` serves the stage: Prefect's own runner, each run in a new interpreter as Prefect starts it, polling
for runs every :func:`poll_seconds` and starting at most a bounded number at once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

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


#: How long ``serve`` goes on starting Prefect's runner again while the server keeps failing it.
PATIENCE_SECONDS: Final[float] = 300.0

#: The longest wait between two starts of the runner.
MAX_BACKOFF_SECONDS: Final[float] = 30.0


def serve_stage(deployments: Sequence[RunnerDeployment], limit: int | None, heartbeat_seconds: int) -> None:
    """Serve ``deployments`` until stopped (SIGTERM or Ctrl-C end it quietly), as ``prefect.serve`` does, with
    Prefect's :class:`~prefect.runner.Runner` polling every :func:`poll_seconds` and starting at most ``limit`` runs
    at once (None: :func:`runner_limit`). Each run is a new interpreter that imports its flow by module path (the
    deployments' entrypoints), so a run always runs the code installed when it starts.

    Prefect's runner stops after three failed polls in a row (the server restarting, its Redis restarting): once it
    has served, it is started again, after 1, 2, 4... up to :data:`MAX_BACKOFF_SECONDS` seconds, one line each
    time; the error is raised once the server has failed it for :data:`PATIENCE_SECONDS` in a row. The deployments
    are registered again at each start. A run the stopped runner was watching is left to the stage's automations
    (no heartbeat for 90 s: Crashed, then run again)"""
    import asyncio
    import time

    from prefect.exceptions import TerminationSignal
    from prefect.runner import Runner
    from prefect.settings import PREFECT_RUNNER_POLL_FREQUENCY, temporary_settings

    poll = poll_seconds()
    names = ", ".join(f"{deployment.flow_name}/{deployment.name}" for deployment in deployments)
    served, failing_since, backoff = False, None, 1.0
    with temporary_settings(updates={PREFECT_RUNNER_POLL_FREQUENCY: poll}):
        while True:
            runner = Runner(limit=limit or runner_limit(deployments), heartbeat_seconds=heartbeat_seconds)
            try:
                for deployment in deployments:
                    runner.add_deployment(deployment)
                print(f"serving {names}; polling every {poll} s" if not served else "serving again", flush=True)
                served, failing_since, backoff = True, None, 1.0
                asyncio.run(runner.start())
                return
            except (KeyboardInterrupt, TerminationSignal):
                return
            except Exception as exc:  # noqa: BLE001 - the server failed the runner: start it again, for a while
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                if not served or now - failing_since > PATIENCE_SECONDS:
                    raise
                text = " ".join(str(exc).split())[:300]
                print(
                    f"the runner stopped ({type(exc).__name__}: {text}); starting it again in {backoff:.0f} s",
                    flush=True,
                )
                time.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
