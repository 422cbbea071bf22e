"""The file layer of content-selection, free of Prefect.

Modules, each one concept:

* :mod:`~selection_storage.transient`: which I/O failures a retry may cure (the one errno policy);
* :mod:`~selection_storage.files`: reading inputs (whole, or a span of a known version) and hashing files;
* :mod:`~selection_storage.atomic`: atomic and grouped writes, staged files and their stale temporaries;
* :mod:`~selection_storage.report`: the JSON Lines report;
* :mod:`~selection_storage.paths`: where a run may read and write (the path policy);
* :mod:`~selection_storage.batch`: a batch read whole, a selected batch written whole;
* :mod:`~selection_storage.scan`: a batch file's first pass: its SHA-256 and runs of articles, read block by block;
* :mod:`~selection_storage.chunks`: the plan of a batch scored in runs and chunks, and the scoring of one;
* :mod:`~selection_storage.chunked_file`: a batch file selected one run at a time in this process (:func:`select_file`);
* :mod:`~selection_storage.whole_file`: a batch file selected in one piece (the reference and the fallback);
* :mod:`~selection_storage.refusal`: the whole file's refusal, computed one run of articles at a time;
* :mod:`~selection_storage.parts`: the chunks' part files and their assembly into the output;
* :mod:`~selection_storage.directory`: the batches of a directory that need a selection;
* :mod:`~selection_storage.lookup`: one article of a batch file, found without loading the batch.

The names below are the public API; import them from here.
"""

from selection_storage.atomic import (
    StagedFile,
    clean_stale_temporaries,
    process_alive,
    temporary_name,
    write_atomic,
    write_atomic_group,
)
from selection_storage.batch import WrittenFile, write_selected
from selection_storage.chunked_file import RunResult, select_file
from selection_storage.chunks import (
    BatchPlan,
    ChunkJob,
    ChunkOutcome,
    auto_chunk_size,
    chunk_bounds,
    plan_batch,
    plan_jobs,
    score_chunk,
)
from selection_storage.directory import find_batches, find_stale_batches, is_stale
from selection_storage.files import (
    FileIdentity,
    InputChangedError,
    open_input,
    read_error,
    read_input,
    read_span,
    sha256_bytes,
    sha256_file,
)
from selection_storage.lookup import FoundArticle, find_article
from selection_storage.parts import PartJoiner, assemble_parts, discard_parts, join_parts
from selection_storage.paths import (
    DATA_ROOT_ENV,
    EXTRACTED_SUFFIX,
    SELECTED_SUFFIX,
    DataRoot,
    RunPaths,
    configured_data_root,
    confine,
    data_root_in_force,
    refuse_report_on_output,
    resolve_data_root,
    resolve_output_path,
    resolve_run_paths,
    selected_path,
)
from selection_storage.refusal import whole_file_refusal
from selection_storage.report import report_lines, write_report
from selection_storage.transient import TRANSIENT_ERRNOS, is_transient_io_error
from selection_storage.whole_file import OnePieceResult, select_file_in_one_piece

__all__ = [
    "DATA_ROOT_ENV",
    "EXTRACTED_SUFFIX",
    "SELECTED_SUFFIX",
    "TRANSIENT_ERRNOS",
    "BatchPlan",
    "ChunkJob",
    "ChunkOutcome",
    "OnePieceResult",
    "FileIdentity",
    "FoundArticle",
    "InputChangedError",
    "PartJoiner",
    "RunPaths",
    "RunResult",
    "StagedFile",
    "WrittenFile",
    "assemble_parts",
    "auto_chunk_size",
    "chunk_bounds",
    "clean_stale_temporaries",
    "DataRoot",
    "configured_data_root",
    "data_root_in_force",
    "confine",
    "discard_parts",
    "find_article",
    "find_batches",
    "find_stale_batches",
    "is_stale",
    "is_transient_io_error",
    "join_parts",
    "open_input",
    "plan_batch",
    "plan_jobs",
    "process_alive",
    "read_error",
    "read_input",
    "read_span",
    "refuse_report_on_output",
    "report_lines",
    "resolve_data_root",
    "resolve_output_path",
    "resolve_run_paths",
    "score_chunk",
    "select_file",
    "select_file_in_one_piece",
    "selected_path",
    "sha256_bytes",
    "sha256_file",
    "temporary_name",
    "whole_file_refusal",
    "write_atomic",
    "write_atomic_group",
    "write_report",
    "write_selected",
]
