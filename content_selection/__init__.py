"""What your own code imports from content-selection: the event contract and the completion trigger."""

from __future__ import annotations

from content_selection.completion import FLOW_COMPLETED_EVENT, flow_completed_trigger
from content_selection.events import (
    BATCH_EXTRACTED_EVENT,
    BATCH_PATH_LABEL,
    BATCH_RESOURCE_PREFIX,
    EventNotDeliveredError,
    batch_extracted_resource,
    batch_extracted_trigger,
    emit_batch_extracted,
)

__all__ = [
    "BATCH_EXTRACTED_EVENT",
    "BATCH_PATH_LABEL",
    "BATCH_RESOURCE_PREFIX",
    "FLOW_COMPLETED_EVENT",
    "batch_extracted_resource",
    "batch_extracted_trigger",
    "EventNotDeliveredError",
    "emit_batch_extracted",
    "flow_completed_trigger",
]
