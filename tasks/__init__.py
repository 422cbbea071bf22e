"""Prefect tasks of the content-selection stage: thin wrappers around ``selection_core``."""

from tasks.artifacts import SCORES_ARTIFACT_KEY, SUMMARY_ARTIFACT_KEY, publish_artifacts
from tasks.batch import LoadedBatch, WrittenFile, extract_batch, persist_batch, write_selection_report
from tasks.paths import DATA_ROOT_ENV, RunPaths, check_paths, resolve_run_paths
from tasks.retries import is_transient_io_error, retry_on_transient_io
from tasks.select import PROGRESS_ARTIFACT_KEY, select_extractors

__all__ = [
    "DATA_ROOT_ENV",
    "PROGRESS_ARTIFACT_KEY",
    "SCORES_ARTIFACT_KEY",
    "SUMMARY_ARTIFACT_KEY",
    "LoadedBatch",
    "RunPaths",
    "WrittenFile",
    "check_paths",
    "extract_batch",
    "is_transient_io_error",
    "persist_batch",
    "publish_artifacts",
    "resolve_run_paths",
    "retry_on_transient_io",
    "select_extractors",
    "write_selection_report",
]
