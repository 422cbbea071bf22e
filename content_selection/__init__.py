"""What your own code imports from content-selection, under a name no project of yours shadows.

The contract between an upstream extraction flow and the triggered selection run
(defined in :mod:`content_selection.events`). An upstream flow tells the stage that
a batch is ready with :func:`emit_batch_extracted`::

    from content_selection import emit_batch_extracted

For an upstream flow that cannot emit it, :func:`flow_completed_trigger`
(:mod:`content_selection.completion`) starts the selection when the flow's run
completes, on the path in one of its parameters.

This package imports Prefect's events and nothing of the project's ``flows``,
``tasks`` or ``deployments``, so a project with packages of those names can use it.
"""

from __future__ import annotations

from content_selection.completion import FLOW_COMPLETED_EVENT, flow_completed_trigger
from content_selection.events import (
    BATCH_EXTRACTED_EVENT,
    BATCH_PATH_LABEL,
    BATCH_RESOURCE_PREFIX,
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
    "emit_batch_extracted",
    "flow_completed_trigger",
]
