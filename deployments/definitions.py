"""The deployments of the stage, as Python objects for ``serve``.

They mirror ``prefect.yaml`` (a test checks that both agree):

* ``select-content/manual``: no schedule; started from the UI or the API.
* ``select-directory/scheduled``: on a cron schedule, selects every stale batch
  under the data root (or a given directory).
* ``select-content/triggered``: started by each ``content-selection.batch.extracted``
  event (see :mod:`content_selection`); refuses to run without a data root.
* ``extract-articles/manual``: extract one page set, started from the UI or the API.
* ``extract-inbox/scheduled``: on the same cron schedule, extracts every new page
  set of the inbox (``<data root>/inbox`` by default); each batch is announced, so
  ``select-content/triggered`` selects it. One run at a time.
* ``select-content/after-flow``, only when an upstream flow is named: started when
  a run of that flow completes, on the path in one of its parameters
  (:func:`content_selection.flow_completed_trigger`; a commented block in ``prefect.yaml``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefect.client.schemas.schedules import CronSchedule
from prefect.types.entrypoint import EntrypointType

from content_selection import batch_extracted_trigger, flow_completed_trigger
from deployments.config import (
    AFTER_FLOW_DEPLOYMENT,
    DEFAULT_CRON,
    DEFAULT_TIMEZONE,
    MANUAL_DEPLOYMENT,
    SCHEDULED_DEPLOYMENT,
    TAGS,
    TRIGGERED_DEPLOYMENT,
)
from flows.extract_and_select import extract_and_select
from flows.extract_articles import extract_articles
from flows.extract_inbox import extract_inbox
from flows.select_content import select_content
from flows.select_directory import select_directory

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment


def check_after_flow(flow_name: str, parameter: str) -> None:
    """Refuse an upstream flow that ``select-content/after-flow`` cannot follow.

    The stage's own flows are refused: ``select-content`` would start itself again
    on every completion, and the extraction flows already announce their batches to
    ``select-content/triggered`` (the batch would be selected twice).

    Raises:
        ValueError: an empty name, a flow of the stage, or a parameter that is not an identifier.
    """
    stage = (select_content, select_directory, extract_articles, extract_inbox, extract_and_select)
    own = sorted(f.name for f in stage)
    if flow_name in own:
        raise ValueError(
            f"{flow_name!r} is a flow of this stage ({', '.join(own)}); name the upstream flow that writes "
            "the batch (extract-articles already starts select-content/triggered by its event)"
        )
    flow_completed_trigger(flow_name, parameter)  # checks the name and the parameter


def build_deployments(
    *,
    data_root: str | None = None,
    directory: str | None = None,
    inbox: str | None = None,
    cron: str = DEFAULT_CRON,
    timezone: str = DEFAULT_TIMEZONE,
    after_flow: tuple[str, str] | None = None,
) -> list[RunnerDeployment]:
    """Build the stage's deployments.

    Flows are referenced by module path (``flows.select_content.select_content``)
    so that served runs find them wherever the process was started from, as long
    as the project is installed (or started from its root).

    Args:
        data_root: Data root given to the scheduled and triggered deployments as a
            default parameter; None to rely on ``CONTENT_SELECTION_DATA_ROOT`` at run time.
        directory: Folder the scheduled selection scans; None for the data root.
        inbox: Folder the scheduled extraction looks at; None for ``<data root>/inbox``.
        cron: Cron expression of both scheduled deployments.
        timezone: Time zone of the cron expression.
        after_flow: ``(flow name, path parameter)`` of an upstream flow whose
            completed runs start ``select-content/after-flow``; None for no such deployment.

    Returns:
        The deployments, in the order select-content/manual, select-directory/scheduled,
        select-content/triggered, extract-articles/manual, extract-inbox/scheduled
        [, select-content/after-flow].

    Raises:
        ValueError: an invalid cron expression or time zone, or an invalid ``after_flow``.
    """
    common: dict[str, Any] = {
        "tags": list(TAGS),
        "enforce_parameter_schema": True,
        "entrypoint_type": EntrypointType.MODULE_PATH,
    }
    root_parameter = {"data_root": data_root} if data_root else {}
    scheduled_parameters = {**root_parameter, **({"directory": directory} if directory else {})}
    inbox_parameters = {**root_parameter, **({"inbox": inbox} if inbox else {})}
    schedule = CronSchedule(cron=cron, timezone=timezone)

    manual = select_content.to_deployment(
        name=MANUAL_DEPLOYMENT,
        description="Select one batch, started by hand from the UI or the API.",
        **common,
    )
    scheduled = select_directory.to_deployment(
        name=SCHEDULED_DEPLOYMENT,
        description="Select every *_extracted.json under the data root whose _selected.json is missing or older.",
        schedule=schedule,
        parameters=scheduled_parameters,
        concurrency_limit=1,
        **common,
    )
    triggered = select_content.to_deployment(
        name=TRIGGERED_DEPLOYMENT,
        description="Select a batch when the upstream extraction flow emits content-selection.batch.extracted.",
        parameters={**root_parameter, "require_data_root": True},
        triggers=[batch_extracted_trigger()],
        **common,
    )
    extract_manual = extract_articles.to_deployment(
        name=MANUAL_DEPLOYMENT,
        description="Extract one page set into a batch and announce it, started by hand from the UI or the API.",
        **common,
    )
    extract_scheduled = extract_inbox.to_deployment(
        name=SCHEDULED_DEPLOYMENT,
        description="Extract every page set in the inbox that has no up-to-date batch; each batch is then selected.",
        schedule=schedule,
        parameters=inbox_parameters,
        concurrency_limit=1,
        **common,
    )
    deployments = [manual, scheduled, triggered, extract_manual, extract_scheduled]
    if after_flow is not None:
        flow_name, parameter = after_flow
        check_after_flow(flow_name, parameter)
        deployments.append(
            select_content.to_deployment(
                name=AFTER_FLOW_DEPLOYMENT,
                description="Select the batch an upstream flow wrote, when its run completes.",
                parameters={**root_parameter, "require_data_root": True},
                triggers=[flow_completed_trigger(flow_name, parameter)],
                **common,
            )
        )
    return deployments
