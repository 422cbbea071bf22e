"""A batch file selected one run of articles at a time in this process: memory bounded by a run, not the batch.

What ``content-selection select``, the in-process ``select-content`` flow, the
directory scan and ``extract-and-select`` (``content-selection pipeline``) run:

1. the batch is read once, block by block, hashed as it streams by, and cut into
   runs of consecutive articles of at most :data:`~selection_storage.chunks.RUN_BYTES`
   bytes, without parsing them (:func:`selection_storage.chunks.plan_batch`);
2. each run is read again, parsed, validated, scored and rendered, and its bytes are
   appended straight to the output's staged file (and its report lines to the
   report's), hashed as they are written; then it is let go;
3. output and report are committed as one atomic group.

The bytes are those of :func:`selection_storage.whole_file.select_file_in_one_piece`
(the tests compare them on every kind of input), and so are the refusals: an invalid
run is reported as the whole-document parse reports it. A batch whose articles
cannot be delimited without parsing is selected in one piece, and the result says
so (``one_piece``), for the run's log and summary.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import selection_core as sc
from selection_core.batch import ProgressCallback, Summary
from selection_core.evidence import MAX_CLOSEST_CALLS, ShownEvidence, article_row, merge_evidence
from selection_core.select import Selection
from selection_storage.batch import WrittenFile
from selection_storage.chunks import plan_batch, refuse_as_whole, score_run
from selection_storage.files import read_span, sha256_file
from selection_storage.parts import PartJoiner
from selection_storage.paths import resolve_report_path, resolve_selected_path
from selection_storage.whole_file import select_document


@dataclass(frozen=True)
class RunResult:
    """What a run wrote, and its counts.

    ``runs`` is the number of runs of articles it was read in (1 with ``one_piece``
    when the batch had to be read whole); ``written`` is the output with the SHA-256
    of its bytes, ``input_sha256`` that of the input's, and ``evidence`` what the
    flows' artifacts show of the batch when it was asked for (``evidence_rows``);
    ``input_size`` is the input's size in bytes.
    """

    input_path: Path
    output_path: Path
    report_path: Path | None
    summary: Summary
    runs: int
    one_piece: bool
    input_sha256: str
    input_size: int
    written: WrittenFile
    evidence: ShownEvidence | None = None


def _no_row(_article: dict[str, Any], _selection: Selection) -> dict[str, Any]:
    return {}


def select_file(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    report_path: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    evidence_rows: int | None = None,
    run_articles: int | None = None,
) -> RunResult:
    """Select every article of one batch file, one run at a time; write the output (and report).

    Nothing is written unless every run was valid; no staged file is left behind,
    whatever fails; the input is only read. With ``evidence_rows``, the result also
    has what the flows' artifacts show of the batch: the scores-table rows of its
    first ``evidence_rows`` articles and its first close calls
    (:func:`selection_core.evidence.merge_evidence`, the same as
    :func:`~selection_core.evidence.batch_evidence` of the whole batch).
    ``run_articles`` caps the articles of a run (default: bounded by bytes and
    :data:`~selection_storage.chunks.RUN_ARTICLES`).

    Raises:
        InvalidBatchError: as the whole-document parse raises it.
        InputChangedError: the input changed during the run.
        OutputPathError, ReadError, WriteError: as reading and writing files.
    """
    if run_articles is not None and run_articles < 1:
        raise ValueError("run_articles must be at least 1")
    inp = Path(input_path)
    out = resolve_selected_path(inp, output_path)
    report = resolve_report_path(inp, out, report_path)
    plan = plan_batch(inp, run_articles)
    if plan.doc is not None:  # its articles could not be delimited without parsing: the document the plan parsed
        whole = select_document(plan.doc, inp, out, report, progress, evidence_rows)
        written = WrittenFile(out, sha256_file(out), out.stat().st_size)
        return RunResult(
            inp, out, report, whole.summary, 1, True, plan.sha256, plan.size_bytes, written, whole.evidence
        )
    assert plan.layout is not None
    total = plan.article_count
    shown = evidence_rows is not None
    table_rows = max(evidence_rows or 0, 0)
    close_calls = MAX_CLOSEST_CALLS if shown else 0
    summary = sc.summarize(())
    found: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    fmt = plan.format
    joiner = PartJoiner(plan.envelope, total > 0, out, report, fmt)
    try:
        for run in plan.layout.runs:
            data = read_span(inp, plan.identity, run.begin, run.end, fmt.run_prefix, fmt.run_suffix)
            try:
                scored = score_run(
                    data,
                    inp,
                    run,
                    fmt,
                    article_row if shown else _no_row,
                    table_rows,
                    close_calls,
                    bool(report),
                )
            except sc.InvalidBatchError:
                refuse_as_whole(plan)  # raises the whole batch's refusal
                raise
            del data
            joiner.write_run(scored.output, scored.report)
            summary = sc.merge_summaries((summary, scored.summary))
            if shown and (scored.rows or scored.close_calls):
                found.append((scored.rows, scored.close_calls))
                close_calls = max(0, close_calls - len(scored.close_calls))
            if progress is not None:
                progress(run.stop, total)
        written = joiner.complete()
    finally:  # whatever happened, no staged file of this run stays
        joiner.discard()
    if progress is not None and total == 0:
        progress(0, 0)
    evidence = merge_evidence(found, evidence_rows) if shown else None
    runs = len(plan.layout.runs)
    return RunResult(inp, out, report, summary, runs, False, plan.sha256, plan.size_bytes, written, evidence)
