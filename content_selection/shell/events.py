"""The contract between an upstream extraction flow and the triggered selection run."""

from __future__ import annotations

import os
from typing import Any, Final

from prefect.events import DeploymentEventTrigger
from prefect.events.schemas.events import Event, RelatedResource

from selection_storage.stores import is_url

#: The event an upstream flow emits when a batch is written.
BATCH_EXTRACTED_EVENT: Final[str] = "content-selection.batch.extracted"

#: Prefix of the event's resource id; the batch path follows it.
BATCH_RESOURCE_PREFIX: Final[str] = "content-selection.batch."

#: Resource label that carries the batch path.
BATCH_PATH_LABEL: Final[str] = "content-selection.batch.path"

#: Name of the automation that the triggered deployment creates.
TRIGGER_NAME: Final[str] = "select-content-on-batch-extracted"

#: Jinja template (rendered by the Prefect server) that takes the path from the event.
INPUT_PATH_TEMPLATE: Final[str] = "{{ event.resource['" + BATCH_PATH_LABEL + "'] }}"


def batch_extracted_resource(path: str | os.PathLike[str]) -> dict[str, str]:
    """The event resource that names one batch: a relative path made absolute, a URL (``s3://...``) as it is,
    nothing else resolved (the selection run checks the path exactly as sent)."""
    text = str(path)
    absolute = text if is_url(text) or os.path.isabs(text) else os.path.join(os.getcwd(), text)
    return {
        "prefect.resource.id": f"{BATCH_RESOURCE_PREFIX}{absolute}",
        "prefect.resource.name": absolute.rstrip("/").rsplit("/", 1)[-1],
        BATCH_PATH_LABEL: absolute,
    }


class EventNotDeliveredError(RuntimeError):
    """The server did not confirm that it has the event: emit it again (a task's retries do), or let the scheduled
    scan select the batch."""


def emit_batch_extracted(path: str | os.PathLike[str], **payload: Any) -> Event:
    """Announce, last in the upstream flow, that the batch at ``path`` is completely written; return the event
    once the server has confirmed it has it.

    ``payload``: extra JSON-able fields (the selection run reads only the path). The event is related to the
    current flow run, if any. Call it in a task with retries: a failure raises, so the retries emit it again.

    Raises:
        EventNotDeliveredError: the server could not be reached or refused the event (one line, the batch named).
    """
    resource = batch_extracted_resource(path)
    event = Event(
        event=BATCH_EXTRACTED_EVENT, resource=resource, payload={**payload, "path": resource[BATCH_PATH_LABEL]}
    )
    from prefect.utilities.asyncutils import run_coro_as_sync

    try:
        run_coro_as_sync(_post(event))
    except Exception as exc:  # noqa: BLE001 - every way of not confirming is the one error
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise EventNotDeliveredError(
            f"{resource[BATCH_PATH_LABEL]}: the Prefect server did not confirm {BATCH_EXTRACTED_EVENT} "
            f"({type(exc).__name__}: {reason[:300]}); emit it again once the server at PREFECT_API_URL answers, "
            "or the scheduled scan selects the batch"
        ) from exc
    return event


async def _post(event: Event) -> None:
    """POST the event to the server's events endpoint, which answers once it has it (not the fire-and-forget
    websocket of ``prefect.events.emit_event``)."""
    from prefect.client.orchestration import get_client
    from prefect.events.related import related_resources_from_run_context

    async with get_client() as client:
        related: list[RelatedResource] = await related_resources_from_run_context(client)
        event.related = related
        await client.request("POST", "/events", json=[event.model_dump(mode="json")])


def batch_extracted_trigger(*, enabled: bool = True) -> DeploymentEventTrigger:
    """The trigger of the ``triggered`` deployment: one run per batch-extracted event."""
    return DeploymentEventTrigger(
        name=TRIGGER_NAME,
        description="Select a batch as soon as the upstream extraction flow has written it.",
        enabled=enabled,
        expect={BATCH_EXTRACTED_EVENT},
        match={"prefect.resource.id": f"{BATCH_RESOURCE_PREFIX}*"},
        for_each={"prefect.resource.id"},
        parameters={"input_path": INPUT_PATH_TEMPLATE},
    )
