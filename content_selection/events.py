"""The contract between an upstream extraction flow and the triggered selection run."""

from __future__ import annotations

import os
from typing import Any, Final

from prefect.events import DeploymentEventTrigger, emit_event
from prefect.events.schemas.events import Event

__all__ = [
    "BATCH_EXTRACTED_EVENT",
    "BATCH_PATH_LABEL",
    "BATCH_RESOURCE_PREFIX",
    "INPUT_PATH_TEMPLATE",
    "TRIGGER_NAME",
    "batch_extracted_resource",
    "batch_extracted_trigger",
    "emit_batch_extracted",
]

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
    """The event resource that names one batch: a relative path made absolute, nothing else resolved (the
    selection run checks the path exactly as sent)."""
    text = os.fspath(path)
    absolute = text if os.path.isabs(text) else os.path.join(os.getcwd(), text)
    return {
        "prefect.resource.id": f"{BATCH_RESOURCE_PREFIX}{absolute}",
        "prefect.resource.name": os.path.basename(absolute),
        BATCH_PATH_LABEL: absolute,
    }


def emit_batch_extracted(path: str | os.PathLike[str], **payload: Any) -> Event | None:
    """Announce, last in the upstream flow, that the batch at ``path`` is completely written.

    ``payload``: extra JSON-able fields (the selection run reads only the path). Returns the emitted event
    (related to the current flow run, if any), or None when events are disabled.
    """
    resource = batch_extracted_resource(path)
    return emit_event(
        event=BATCH_EXTRACTED_EVENT,
        resource=resource,
        payload={**payload, "path": resource[BATCH_PATH_LABEL]},
    )


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
