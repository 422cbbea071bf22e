"""The contract between the upstream extraction flow and the triggered selection run.

When the upstream flow has finished writing a batch, it emits one event::

    event:    content-selection.batch.extracted
    resource: prefect.resource.id    = content-selection.batch.<absolute path>
              prefect.resource.name  = <file name>
              content-selection.batch.path = <absolute path>
    payload:  {"path": "<absolute path>"}

by calling :func:`emit_batch_extracted` at its end. The ``triggered`` deployment
of ``select-content`` carries a :func:`batch_extracted_trigger`: for every such
event it starts a run with ``input_path`` taken from the event's resource. The
path is untrusted: the run resolves it inside the data root (see
:mod:`selection_storage.paths`) or fails without writing anything.
"""

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
    """The event resource that names one batch.

    A relative path is made absolute against the current directory; nothing else
    is changed (no symlink or ``..`` resolution): the selection run checks the
    path it receives, exactly as sent.

    Example:
        >>> batch_extracted_resource("/data/a_extracted.json")["prefect.resource.id"]
        'content-selection.batch./data/a_extracted.json'
    """
    text = os.fspath(path)
    absolute = text if os.path.isabs(text) else os.path.join(os.getcwd(), text)
    return {
        "prefect.resource.id": f"{BATCH_RESOURCE_PREFIX}{absolute}",
        "prefect.resource.name": os.path.basename(absolute),
        BATCH_PATH_LABEL: absolute,
    }


def emit_batch_extracted(path: str | os.PathLike[str], **payload: Any) -> Event | None:
    """Announce that the batch at ``path`` is written and ready for selection.

    Call it at the end of the upstream extraction flow, after the file is
    completely written (closed, or moved into place). Inside a flow run, Prefect
    relates the event to that run automatically.

    Args:
        path: The ``*_extracted.json`` file just written.
        **payload: Extra JSON-able fields for the event payload (informational;
            the selection run reads only the path).

    Returns:
        The emitted event, or None when events are disabled.

    Example:
        ```python
        from prefect import flow
        from content_selection import emit_batch_extracted

        @flow
        def extract_articles(...) -> str:
            path = write_batch(...)          # your code
            emit_batch_extracted(path)
            return path
        ```
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
