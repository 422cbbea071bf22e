"""A batch file read, validated, selected and written in one piece: the reference, and the fallback.

It holds the whole document (about five times the file's bytes). Runs use it only
where the articles cannot be delimited without parsing
(:func:`selection_storage.chunked_file.select_file` says so); the tests compare the
run-by-run path's bytes and refusals with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selection_core.batch import (
    ProgressCallback,
    Summary,
    apply_selections,
    iter_dump_batch,
    parse_batch,
    select_articles,
    summarize,
)
from selection_core.evidence import ShownEvidence, batch_evidence
from selection_core.select import Selection
from selection_storage.atomic import write_atomic, write_atomic_group
from selection_storage.files import read_input
from selection_storage.paths import resolve_report_path, resolve_selected_path
from selection_storage.report import report_lines


@dataclass(frozen=True)
class OnePieceResult:
    """What one batch run in one piece did."""

    input_path: Path
    output_path: Path
    report_path: Path | None
    summary: Summary
    selections: list[Selection]
    evidence: ShownEvidence | None = None


def select_file_in_one_piece(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str] | None = None,
    report_path: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
    evidence_rows: int | None = None,
) -> OnePieceResult:
    """Read, validate, select and write one batch file. Nothing is written unless
    every check passed; the input is only ever opened for reading. With
    ``evidence_rows``, the result has what the flows' artifacts show of the batch
    (:func:`selection_core.evidence.batch_evidence`, that many table rows)."""
    inp = Path(input_path)
    out = resolve_selected_path(inp, output_path)
    report = resolve_report_path(inp, out, report_path)
    doc = parse_batch(read_input(inp), str(inp))
    return select_document(doc, inp, out, report, progress, evidence_rows)


def select_document(
    doc: dict[str, Any],
    inp: Path,
    out: Path,
    report: Path | None,
    progress: ProgressCallback | None = None,
    evidence_rows: int | None = None,
) -> OnePieceResult:
    """Select and write a batch already parsed and validated (``doc``, updated in place), to checked paths."""
    selections = select_articles(doc["articles"], progress)
    payload = iter_dump_batch(apply_selections(doc, selections))
    if report is None:
        write_atomic(out, payload)
    else:
        # Report first: where the output exists, its report does too; a failure
        # while writing either leaves neither.
        write_atomic_group([(report, report_lines(doc["articles"], selections)), (out, payload)])
    evidence = None if evidence_rows is None else batch_evidence(doc, selections, evidence_rows)
    return OnePieceResult(inp, out, report, summarize(selections), selections, evidence)
