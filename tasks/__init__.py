"""Prefect tasks of the content-selection stage: thin wrappers around ``selection_core``.

The names below are loaded on first use (PEP 562), so that importing a
Prefect-free module of this package (``tasks.extraction``, used by extraction
worker processes) does not pay for importing Prefect.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SCORES_ARTIFACT_KEY": "tasks.artifacts",
    "SUMMARY_ARTIFACT_KEY": "tasks.artifacts",
    "publish_artifacts": "tasks.artifacts",
    "LoadedBatch": "tasks.batch",
    "WrittenFile": "tasks.batch",
    "extract_batch": "tasks.batch",
    "persist_batch": "tasks.batch",
    "write_selection_report": "tasks.batch",
    "DATA_ROOT_ENV": "tasks.paths",
    "RunPaths": "tasks.paths",
    "check_paths": "tasks.paths",
    "resolve_run_paths": "tasks.paths",
    "is_transient_io_error": "tasks.retries",
    "retry_on_transient_io": "tasks.retries",
    "PROGRESS_ARTIFACT_KEY": "tasks.select",
    "select_extractors": "tasks.select",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tasks' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
