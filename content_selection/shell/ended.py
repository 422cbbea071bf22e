"""The end of a run, said by its own process: the event that closes the crash automation's last window.

Prefect's heartbeat thread can send a last heartbeat while the run's final state is on its way; this event, sent by
a final-state hook once the client knows the state is final, comes after it (``docs/prefect.md``, failure modes).
"""

from __future__ import annotations

from typing import Any, Final

from content_selection.shell.params import STAGE_TAG

#: The event a run of the stage emits from its own process once it has reached a final state.
RUN_ENDED_EVENT: Final[str] = "content-selection.flow-run.ended"


def emit_run_ended(flow: Any, flow_run: Any, state: Any) -> None:
    """A flow hook (on completion, failure and cancellation): emit :data:`RUN_ENDED_EVENT` for ``flow_run``,
    related to its tags as its heartbeats are, if it is a run the automations watch (tagged :data:`STAGE_TAG`: a
    run of a deployment of the stage, or its subflow run); a run of the command line or of a user's own code has
    nothing watching it, and sends nothing."""
    if STAGE_TAG not in (flow_run.tags or ()):
        return
    from prefect.events import emit_event

    emit_event(
        event=RUN_ENDED_EVENT,
        resource={
            "prefect.resource.id": f"prefect.flow-run.{flow_run.id}",
            "prefect.resource.name": flow_run.name or "",
            "prefect.state-type": str(state.type.value),
        },
        related=[
            {"prefect.resource.id": f"prefect.tag.{tag}", "prefect.resource.role": "tag"}
            for tag in sorted(flow_run.tags or [])
        ],
    )


#: The hooks every flow of the stage takes (``@flow(..., **RUN_END_HOOKS)``).
RUN_END_HOOKS: Final[dict[str, list[Any]]] = {
    "on_completion": [emit_run_ended],
    "on_failure": [emit_run_ended],
    "on_cancellation": [emit_run_ended],
}
