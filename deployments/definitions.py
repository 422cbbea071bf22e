"""The three deployments of the stage, as Python objects for ``serve``.

They mirror ``prefect.yaml`` (a test checks that both agree):

* ``select-content/manual``: no schedule; started from the UI or the API.
* ``select-directory/scheduled``: on a cron schedule, selects every stale batch
  under the data root (or a given directory).
* ``select-content/triggered``: started by each ``content-selection.batch.extracted``
  event (see :mod:`content_selection`); refuses to run without a data root.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefect.client.schemas.schedules import CronSchedule
from prefect.types.entrypoint import EntrypointType

from content_selection import batch_extracted_trigger
from deployments.config import (
    DEFAULT_CRON,
    DEFAULT_TIMEZONE,
    MANUAL_DEPLOYMENT,
    SCHEDULED_DEPLOYMENT,
    TAGS,
    TRIGGERED_DEPLOYMENT,
)
from flows.select_content import select_content
from flows.select_directory import select_directory

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment


def build_deployments(
    *,
    data_root: str | None = None,
    directory: str | None = None,
    cron: str = DEFAULT_CRON,
    timezone: str = DEFAULT_TIMEZONE,
) -> list[RunnerDeployment]:
    """Build the manual, scheduled and triggered deployments.

    Flows are referenced by module path (``flows.select_content.select_content``)
    so that served runs find them wherever the process was started from, as long
    as the project is installed (or started from its root).

    Args:
        data_root: Data root given to the scheduled and triggered deployments as a
            default parameter; None to rely on ``CONTENT_SELECTION_DATA_ROOT`` at run time.
        directory: Folder the scheduled deployment scans; None for the data root.
        cron: Cron expression of the scheduled deployment.
        timezone: Time zone of the cron expression.

    Returns:
        The deployments, in the order manual, scheduled, triggered.
    """
    common: dict[str, Any] = {
        "tags": list(TAGS),
        "enforce_parameter_schema": True,
        "entrypoint_type": EntrypointType.MODULE_PATH,
    }
    root_parameter = {"data_root": data_root} if data_root else {}
    scheduled_parameters = {**root_parameter, **({"directory": directory} if directory else {})}

    manual = select_content.to_deployment(
        name=MANUAL_DEPLOYMENT,
        description="Select one batch, started by hand from the UI or the API.",
        **common,
    )
    scheduled = select_directory.to_deployment(
        name=SCHEDULED_DEPLOYMENT,
        description="Select every *_extracted.json under the data root whose _selected.json is missing or older.",
        schedule=CronSchedule(cron=cron, timezone=timezone),
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
    return [manual, scheduled, triggered]
