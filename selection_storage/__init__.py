"""The file layer of content-selection, free of Prefect: reading, atomic writing, paths, and the selection engine."""

from selection_storage.atomic import (
    StagedFile,
    WrittenFile,
    clean_stale_temporaries,
    process_alive,
    temporary_name,
    write_atomic,
    write_atomic_group,
)
from selection_storage.directory import find_batches, find_stale_batches, is_stale
from selection_storage.engine import ChunkJob, Plan, Selected, plan_batch, plan_jobs, select_file, select_job
from selection_storage.files import (
    FileIdentity,
    InputChangedError,
    open_input,
    read_error,
    read_span,
    sha256_file,
)
from selection_storage.lookup import FoundArticle, find_article
from selection_storage.paths import (
    DATA_ROOT_ENV,
    EXTRACTED_SUFFIX,
    SELECTED_SUFFIX,
    DataRoot,
    RunPaths,
    configured_data_root,
    confine,
    data_root_in_force,
    resolve_data_root,
    resolve_output_path,
    resolve_run_paths,
    selected_path,
)
from selection_storage.transient import TRANSIENT_ERRNOS, is_transient_io_error

__all__ = [
    "DATA_ROOT_ENV",
    "EXTRACTED_SUFFIX",
    "SELECTED_SUFFIX",
    "TRANSIENT_ERRNOS",
    "ChunkJob",
    "DataRoot",
    "FileIdentity",
    "FoundArticle",
    "InputChangedError",
    "Plan",
    "RunPaths",
    "Selected",
    "StagedFile",
    "WrittenFile",
    "clean_stale_temporaries",
    "configured_data_root",
    "confine",
    "data_root_in_force",
    "find_article",
    "find_batches",
    "find_stale_batches",
    "is_stale",
    "is_transient_io_error",
    "open_input",
    "plan_batch",
    "plan_jobs",
    "process_alive",
    "read_error",
    "read_span",
    "resolve_data_root",
    "resolve_output_path",
    "resolve_run_paths",
    "select_file",
    "select_job",
    "selected_path",
    "sha256_file",
    "temporary_name",
    "write_atomic",
    "write_atomic_group",
]
