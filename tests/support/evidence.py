"""The shown evidence of a batch held whole: the reference that a run's chunked evidence
(:func:`selection_core.evidence.merge_evidence`) must equal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from selection_core.evidence import ShownEvidence, align_rows, article_row, close_call_entries
from selection_core.select import Selection


def score_rows(doc: dict[str, Any], selections: Sequence[Selection], max_rows: int) -> list[dict[str, Any]]:
    """The table's rows: one per article (the first ``max_rows``), columns as ``TABLE_COLUMNS``."""
    articles = doc["articles"]
    return align_rows([article_row(articles[s.index], s) for s in selections[: max(max_rows, 0)]])


def batch_evidence(doc: dict[str, Any], selections: Sequence[Selection], max_rows: int) -> ShownEvidence:
    """The shown evidence of a batch held whole."""
    return ShownEvidence(score_rows(doc, selections, max_rows), close_call_entries(doc["articles"], selections))
