"""The Prefect-native trigger: select a batch when a run of a named upstream flow completes.

For upstream flows that cannot emit ``content-selection.batch.extracted`` (code you
do not own, or do not want to change). The Prefect server itself emits
``prefect.flow-run.Completed`` for every flow run that ends Completed; its
resource is the flow run (``prefect.flow-run.<id>``) and one of its related
resources is the flow, with role ``flow`` and the flow's name. The trigger matches
that related resource by name, and its run-deployment action takes the batch
path from the completed run's own parameters::

    input_path: "{{ flow_run.parameters['output_path'] }}"

When a template names ``flow_run``, the server reads that flow run through its
API (the event's first ``prefect.flow-run`` resource) before rendering, so the
parameters recorded for that run are there (Prefect 3.9,
``prefect.server.events.actions``): those its caller passed, defaults included,
for a flow called directly; those of the deployment and the run for a deployment
run (a flow default not passed by either is not recorded there). A parameter
that is missing fails the automation's action (``InvalidJinja``, seen as a
``prefect.automation.action.failed`` event): no selection run starts.

The path is untrusted, as an event's is: the deployment carrying this trigger
sets ``require_data_root``, so a path outside the data root fails the run and
nothing is written.

Do not point it at a flow that already emits the batch-extracted event
(``extract-articles``): the batch would be selected twice.
"""

from __future__ import annotations

from typing import Final

from prefect.events import DeploymentEventTrigger

__all__ = [
    "FLOW_COMPLETED_EVENT",
    "completion_trigger_name",
    "flow_completed_trigger",
    "path_parameter_template",
]

#: The event the Prefect server emits when a flow run ends in the Completed state.
FLOW_COMPLETED_EVENT: Final[str] = "prefect.flow-run.Completed"


def completion_trigger_name(flow_name: str) -> str:
    """The name of the automation created for ``flow_name``.

    >>> completion_trigger_name("crawl-news")
    'select-content-after-crawl-news'
    """
    return f"select-content-after-{flow_name}"


def path_parameter_template(parameter: str) -> str:
    """The Jinja template, rendered by the server, that reads ``parameter`` of the completed flow run.

    Raises:
        ValueError: ``parameter`` is not a Python identifier (flow parameters always are).

    >>> path_parameter_template("output_path")
    "{{ flow_run.parameters['output_path'] }}"
    """
    if not parameter.isidentifier():
        raise ValueError(
            f"{parameter!r} is not a flow parameter name; give the name of the upstream flow's path parameter"
        )
    return "{{ flow_run.parameters['" + parameter + "'] }}"


def flow_completed_trigger(flow_name: str, parameter: str, *, enabled: bool = True) -> DeploymentEventTrigger:
    """A deployment trigger: one ``select-content`` run per Completed run of ``flow_name``,
    on the path in that run's ``parameter``.

    Args:
        flow_name: The upstream flow's name (``@flow(name=...)``, as the UI shows it).
        parameter: The upstream flow's parameter that holds the batch it wrote.
        enabled: Whether the automation starts enabled.

    Raises:
        ValueError: an empty flow name, or a parameter that is not an identifier.
    """
    if not flow_name.strip():
        raise ValueError("the upstream flow name is empty; give the name its runs show in the UI")
    return DeploymentEventTrigger(
        name=completion_trigger_name(flow_name),
        description=f"Select the batch a run of {flow_name} wrote (its {parameter} parameter) when the run completes.",
        enabled=enabled,
        expect={FLOW_COMPLETED_EVENT},
        match={"prefect.resource.id": "prefect.flow-run.*"},
        match_related={"prefect.resource.role": "flow", "prefect.resource.name": flow_name},
        for_each={"prefect.resource.id"},
        parameters={"input_path": path_parameter_template(parameter)},
    )
