"""The event contract under its earlier import path, ``flows.events``.

The contract lives in :mod:`content_selection.events`; import it from there
(``from content_selection import emit_batch_extracted``): a project with a
``flows`` package of its own shadows this module. It stays so that code written
for earlier releases keeps working where nothing shadows it.
"""

from __future__ import annotations

from content_selection.events import (
    BATCH_EXTRACTED_EVENT,
    BATCH_PATH_LABEL,
    BATCH_RESOURCE_PREFIX,
    INPUT_PATH_TEMPLATE,
    TRIGGER_NAME,
    batch_extracted_resource,
    batch_extracted_trigger,
    emit_batch_extracted,
)

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
