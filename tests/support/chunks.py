"""Joining chunk extractions as the flow ``extract-articles`` does, for the tests that compare with one run."""

from __future__ import annotations

from collections.abc import Sequence

from selection_extraction.extracted import NO_STATS, ExtractionResult
from selection_extraction.extractors import Extractor
from selection_extraction.page_chunks import ChunkExtraction, joined_root
from selection_extraction.pages import PageReadings


def join_chunks(
    readings: PageReadings, parts: Sequence[ChunkExtraction], extractors: Sequence[Extractor], time_limit_seconds: float
) -> ExtractionResult:
    """The batch of the whole input from its chunks' extractions, in page order."""
    total = sum((part.stats for part in parts), NO_STATS)
    result = joined_root(readings, total, extractors, time_limit_seconds)
    result.doc["articles"] = [article for part in parts for article in part.articles]
    return result
