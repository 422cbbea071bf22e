"""The stage's deployments as Python objects for ``serve``; they mirror ``prefect.yaml`` (a test checks both agree)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
from prefect.client.schemas.schedules import CronSchedule
from prefect.types.entrypoint import EntrypointType

from content_selection.deployments.config import DEFAULT_CRON, DEFAULT_TIMEZONE
from content_selection.flows.extract_and_select import extract_and_select
from content_selection.flows.extract_articles import extract_articles
from content_selection.flows.extract_crawl import extract_crawl
from content_selection.flows.extract_inbox import extract_inbox
from content_selection.flows.select_content import select_content
from content_selection.flows.select_directory import select_directory
from content_selection.shell.completion import flow_completed_trigger
from content_selection.shell.events import batch_extracted_trigger
from content_selection.shell.params import STAGE_TAG
from selection_core.dataset import BATCH
from selection_extraction.processes import available_cores

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment


#: Every flow of the stage (what ``serve`` serves).
STAGE_FLOWS: Final = (
    select_content,
    select_directory,
    extract_articles,
    extract_inbox,
    extract_and_select,
    extract_crawl,
)


def check_after_flow(flow_name: str, parameter: str) -> None:
    """Refuse (``ValueError``) an upstream flow that ``select-content/after-flow`` cannot follow: an empty name,
    a flow of the stage (it would start itself, or select a batch twice), or a parameter that is not an identifier."""
    own = sorted(f.name for f in STAGE_FLOWS)
    if flow_name in own:
        raise ValueError(
            f"{flow_name!r} is a flow of this stage ({', '.join(own)}); name the upstream flow that writes "
            "the batch (extract-articles already starts select-content/triggered by its event)"
        )
    flow_completed_trigger(flow_name, parameter)  # checks the name and the parameter


def queued(limit: int) -> ConcurrencyLimitConfig:
    """At most ``limit`` runs of a deployment at once; the others wait their turn (never dropped, never forked)."""
    return ConcurrencyLimitConfig(limit=limit, collision_strategy=ConcurrencyLimitStrategy.ENQUEUE)


def _extract_deployments(
    common: dict[str, Any], inbox_parameters: dict[str, Any], format_parameter: dict[str, Any], schedule: CronSchedule
) -> list[RunnerDeployment]:
    """The deployments that extract: one page set by hand, the inbox on the schedule, a crawl by hand."""
    extract_manual = extract_articles.to_deployment(
        name="manual",
        description="Extract one page set into a batch and announce it, started by hand from the UI or the API.",
        **common,
    )
    extract_scheduled = extract_inbox.to_deployment(
        name="scheduled",
        description="Extract every page set in the inbox that has no up-to-date batch; each batch is then selected.",
        schedule=schedule,
        parameters=inbox_parameters,
        concurrency_limit=queued(1),
        **common,
    )
    crawl_manual = extract_crawl.to_deployment(
        name="manual",
        description="Extract and select every WARC of a listing into a prefix; a re-run does only what is left.",
        parameters=format_parameter,
        concurrency_limit=queued(1),
        **common,
    )
    return [extract_manual, extract_scheduled, crawl_manual]


def build_deployments(
    *,
    data_root: str | None = None,
    directory: str | None = None,
    inbox: str | None = None,
    cron: str = DEFAULT_CRON,
    timezone: str = DEFAULT_TIMEZONE,
    after_flow: tuple[str, str] | None = None,
    concurrency_limit: int | None = None,
    output_format: str = BATCH,
) -> list[RunnerDeployment]:
    """Build the stage's deployments, their flows referenced by module path (the project must be importable).

    Args:
        data_root: Default ``data_root`` of the scheduled and triggered deployments; None for the environment's.
        directory, inbox: Folders the scheduled selection and extraction scan; None for their defaults.
        after_flow: ``(flow name, path parameter)`` of an upstream flow whose completed runs start
            ``select-content/after-flow``; None for no such deployment.
        concurrency_limit: Most runs of the triggered (and after-flow) deployment at once, everywhere; extra
            runs queue. None: this machine's cores. The scheduled scans run one at a time (a second scan at
            once would select the same batches), their extra runs queued too.
        output_format: Default ``output_format`` of the deployments that select (``"dataset"``: Parquet).

    Raises:
        ValueError: an invalid cron expression or time zone, or an invalid ``after_flow``.
    """
    common: dict[str, Any] = {
        "tags": [STAGE_TAG],
        "enforce_parameter_schema": True,
        "entrypoint_type": EntrypointType.MODULE_PATH,
    }
    format_parameter = {} if output_format == BATCH else {"output_format": output_format}
    root_parameter = {"data_root": data_root} if data_root else {}
    scheduled_parameters = {**root_parameter, **format_parameter, **({"directory": directory} if directory else {})}
    inbox_parameters = {**root_parameter, **({"inbox": inbox} if inbox else {})}
    schedule = CronSchedule(cron=cron, timezone=timezone)
    one_at_a_time = queued(1)
    triggered_limit = queued(concurrency_limit or available_cores())

    manual = select_content.to_deployment(
        name="manual",
        description="Select one batch, started by hand from the UI or the API.",
        parameters=format_parameter,
        **common,
    )
    scheduled = select_directory.to_deployment(
        name="scheduled",
        description="Select every *_extracted.json under the data root whose _selected.json is missing or older.",
        schedule=schedule,
        parameters=scheduled_parameters,
        concurrency_limit=one_at_a_time,
        **common,
    )
    triggered = select_content.to_deployment(
        name="triggered",
        description="Select a batch when the upstream extraction flow emits content-selection.batch.extracted.",
        parameters={**root_parameter, **format_parameter, "require_data_root": True},
        triggers=[batch_extracted_trigger()],
        concurrency_limit=triggered_limit,
        **common,
    )
    deployments = [
        manual,
        scheduled,
        triggered,
        *_extract_deployments(common, inbox_parameters, format_parameter, schedule),
    ]
    if after_flow is not None:
        flow_name, parameter = after_flow
        check_after_flow(flow_name, parameter)
        deployments.append(
            select_content.to_deployment(
                name="after-flow",
                description="Select the batch an upstream flow wrote, when its run completes.",
                parameters={**root_parameter, **format_parameter, "require_data_root": True},
                triggers=[flow_completed_trigger(flow_name, parameter)],
                concurrency_limit=triggered_limit,
                **common,
            )
        )
    return deployments
