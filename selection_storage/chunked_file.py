"""A batch file selected in chunks, one after the other in this process: memory bounded by a chunk, not the batch.

The same plan, chunk scoring and part joining as the flows' parallel runners
(:mod:`selection_storage.chunks`, :mod:`selection_storage.parts`), run in order
here: the batch is hashed and its articles located without parsing them, then each
chunk of consecutive articles is read, parsed, scored and written to a part file
beside the output, and the parts are joined into the output (and the report) as one
atomic group. The bytes are those of :func:`selection_storage.whole_file.select_file`
(the tests compare them), and so are the refusals: an invalid chunk is reported as
the whole-document parse reports it. A batch whose articles cannot be delimited
without parsing is selected in one piece, as the flows do.

The flow ``extract-and-select`` (which ``content-selection pipeline`` runs) selects
the batch it has just extracted this way, so that neither of its steps holds the
batch; it asks for what its artifacts show of the batch (``evidence_rows``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import selection_core as sc
from selection_core.batch import ProgressCallback, Summary
from selection_core.evidence import MAX_CLOSEST_CALLS, ShownEvidence, article_row, merge_evidence
from selection_core.select import Selection
from selection_storage.batch import WrittenFile
from selection_storage.chunks import ChunkJob, ChunkOutcome, canonical_error, plan_batch, plan_jobs, score_chunk
from selection_storage.files import sha256_file
from selection_storage.parts import PartJoiner, assemble_parts, discard_parts
from selection_storage.paths import resolve_output_path, resolve_report_path
from selection_storage.whole_file import select_file

#: Articles per chunk: about 15 MB of a typical extracted batch (three texts of a news page each).
DEFAULT_FILE_CHUNK_ARTICLES: Final[int] = 1000


@dataclass(frozen=True)
class ChunkedRunResult:
    """What a chunked run wrote, and its counts; ``chunks`` is 1 when the batch was selected in one piece.

    ``written`` is the output with the SHA-256 of its bytes, ``input_sha256`` that of
    the input's, and ``evidence`` what the flows' artifacts show of the batch when it
    was asked for (``evidence_rows``).
    """

    input_path: Path
    output_path: Path
    report_path: Path | None
    summary: Summary
    chunks: int
    input_sha256: str
    written: WrittenFile
    evidence: ShownEvidence | None = None


def _no_row(_article: dict[str, Any], _selection: Selection) -> dict[str, Any]:
    return {}


def select_file_in_chunks(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    report_path: str | os.PathLike[str] | None = None,
    chunk_articles: int = DEFAULT_FILE_CHUNK_ARTICLES,
    progress: ProgressCallback | None = None,
    evidence_rows: int | None = None,
) -> ChunkedRunResult:
    """Select every article of one batch file, ``chunk_articles`` at a time; write the output (and report).

    Nothing is written unless every chunk was valid; no part file is left behind,
    whatever fails; the input is only read. With ``evidence_rows``, the result also
    has what the flows' artifacts show of the batch: the scores-table rows of its
    first ``evidence_rows`` articles and its first close calls, built where each
    chunk is scored (:func:`selection_core.evidence.merge_evidence`, the same as
    :func:`~selection_core.evidence.batch_evidence` of the whole batch).

    Raises:
        InvalidBatchError: as :func:`~selection_storage.whole_file.select_file` raises it.
        OutputPathError, ReadError, WriteError: as reading and writing files.
    """
    if chunk_articles < 1:
        raise ValueError("chunk_articles must be at least 1")
    inp = Path(input_path)
    out = resolve_output_path(inp, output_path)
    report = resolve_report_path(inp, out, report_path)
    plan = plan_batch(inp)
    if plan.doc is not None:  # its articles could not be delimited without parsing: one piece
        whole = select_file(inp, out, report, progress, evidence_rows)
        written = WrittenFile(out, sha256_file(out), out.stat().st_size)
        return ChunkedRunResult(inp, out, report, whole.summary, 1, plan.sha256, written, whole.evidence)
    total = plan.article_count
    shown = evidence_rows is not None
    jobs: list[ChunkJob] = plan_jobs(
        plan,
        chunk_articles,
        out,
        report,
        table_rows=max(evidence_rows or 0, 0),
        close_calls=MAX_CLOSEST_CALLS if shown else 0,
    )
    outcomes: list[ChunkOutcome] = []
    joiner = PartJoiner(plan.envelope, total > 0, out, report)
    try:
        for job in jobs:
            try:
                outcome = score_chunk(job, article_row if shown else _no_row)
            except sc.InvalidBatchError:
                canonical_error(inp)  # raises the one-piece path's message
                raise
            outcomes.append(outcome)
            joiner.add(outcome)  # joined into the staged output before the next chunk is read
            if progress is not None:
                progress(job.stop, total)
        written = assemble_parts(plan.envelope, outcomes, out, report, joined=joiner)
    finally:  # whatever happened, no staged file and no part of this run stays
        joiner.discard()
        discard_parts(jobs)
    if progress is not None and total == 0:
        progress(0, 0)
    summary = sc.merge_summaries(o.summary for o in outcomes)
    evidence = merge_evidence(((o.rows, o.close_calls) for o in outcomes), evidence_rows) if shown else None
    return ChunkedRunResult(inp, out, report, summary, len(jobs), plan.sha256, written, evidence)
