"""The file layer of content-selection, free of Prefect: reading, atomic writing, paths, and the selection engine."""

from selection_storage.atomic import write_atomic, write_atomic_group
from selection_storage.directory import find_batches, find_stale_batches
from selection_storage.engine import plan_batch, plan_jobs, select_file, select_job
from selection_storage.files import sha256_file
from selection_storage.lookup import find_article

__all__ = [
    "find_article",
    "find_batches",
    "find_stale_batches",
    "plan_batch",
    "plan_jobs",
    "select_file",
    "select_job",
    "sha256_file",
    "write_atomic",
    "write_atomic_group",
]
