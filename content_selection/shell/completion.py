"""The Prefect-native trigger: select a batch when a run of a named upstream flow completes."""

from __future__ import annotations

from typing import Final

from prefect.events import DeploymentEventTrigger

#: The event the Prefect server emits when a flow run ends in the Completed state.
FLOW_COMPLETED_EVENT: Final[str] = "prefect.flow-run.Completed"


def completion_trigger_name(flow_name: str) -> str:
    return f"select-content-after-{flow_name}"


def path_parameter_template(parameter: str) -> str:
    """The Jinja template, rendered by the server, that reads ``parameter`` (an identifier) of the completed run."""
    if not parameter.isidentifier():
        raise ValueError(
            f"{parameter!r} is not a flow parameter name; give the name of the upstream flow's path parameter"
        )
    return "{{ flow_run.parameters['" + parameter + "'] }}"


def flow_completed_trigger(flow_name: str, parameter: str, *, enabled: bool = True) -> DeploymentEventTrigger:
    """A deployment trigger: one ``select-content`` run per Completed run of the flow ``flow_name``
    (as the UI shows it), on the path in that run's ``parameter``; ``ValueError`` for an empty name."""
    if not flow_name.strip():
        raise ValueError("the upstream flow name is empty; give the name its runs show in the UI")
    return DeploymentEventTrigger(
        name=completion_trigger_name(flow_name),
        description=f"Select the batch a run of {flow_name} wrote (its {parameter} parameter) when the run completes.",
        enabled=enabled,
        expect={FLOW_COMPLETED_EVENT},
        # the event's resource is the flow run; the flow is a related resource of role "flow"
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related={"prefect.resource.role": "flow", "prefect.resource.name": flow_name},
        for_each={"prefect.resource.id"},
        parameters={"input_path": path_parameter_template(parameter)},
    )
