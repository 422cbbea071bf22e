"""What your own Prefect project imports from content-selection: the flows and the task to compose,
and the event contract with its triggers.

    from content_selection import select_content, emit_batch_extracted

Each name is imported when first asked for, so ``import content_selection`` (and every module below
it) starts without loading Prefect or the extractors.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name and the module that defines it.
_HOMES = {
    "select_content": "content_selection.flows.select_content",
    "extract_articles": "content_selection.flows.extract_articles",
    "extract_and_select": "content_selection.flows.extract_and_select",
    "select_batch": "content_selection.tasks.selection",
    "BATCH_EXTRACTED_EVENT": "content_selection.shell.events",
    "BATCH_PATH_LABEL": "content_selection.shell.events",
    "BATCH_RESOURCE_PREFIX": "content_selection.shell.events",
    "EventNotDeliveredError": "content_selection.shell.events",
    "batch_extracted_resource": "content_selection.shell.events",
    "batch_extracted_trigger": "content_selection.shell.events",
    "emit_batch_extracted": "content_selection.shell.events",
    "FLOW_COMPLETED_EVENT": "content_selection.shell.completion",
    "flow_completed_trigger": "content_selection.shell.completion",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'content_selection' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
