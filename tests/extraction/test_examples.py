"""Small contracts of the extraction helpers, one example each."""

from __future__ import annotations

from selection_extraction.artifacts import PageRows, page_row, progress_description
from selection_extraction.batch import NO_STATS, ExtractionStats, dump_record
from selection_extraction.chunks import balanced_bounds, capped_bounds
from selection_extraction.pages import PageSet
from selection_extraction.pool import FunctionRef, error_text


def test_function_ref_calls_the_named_function_and_compares_by_name() -> None:
    ref = FunctionRef("os.path", "basename")
    assert ref("/a/b.html") == "b.html"
    assert ref == FunctionRef("os.path", "basename")
    assert hash(ref) == hash(FunctionRef("os.path", "basename"))


def test_error_text_is_one_line() -> None:
    assert error_text(ValueError("bad\n  value")) == "ValueError: bad value"


def test_chunk_bounds_examples() -> None:
    assert balanced_bounds([1, 1, 1, 1, 8, 1, 1, 1], 2) == [(0, 4), (4, 8)]
    assert balanced_bounds([5, 5, 5], 5) == [(0, 1), (1, 2), (2, 3)]
    assert balanced_bounds([], 2) == []
    assert capped_bounds([(0, 5), (5, 6)], [1, 1, 1, 1, 1, 9], max_items=2, max_weight=10) == [
        (0, 2),
        (2, 4),
        (4, 5),
        (5, 6),
    ]


def test_the_counts_of_two_chunks_add_up_as_one_run() -> None:
    s = ExtractionStats(2, 1, {"readability": 1}, {}, 0, ("x",))
    both = NO_STATS + s + s
    assert (both.pages, both.errors["readability"], both.network_attempts) == (4, 2, ("x", "x"))


def test_the_record_of_a_jsonl_batch_is_its_root_without_articles() -> None:
    record = dump_record({"extraction": {"pages": 0}, "articles": []})
    assert record == b'{\n  "extraction": {\n    "pages": 0\n  }\n}\n'


def test_artifact_examples() -> None:
    description = progress_description(PageSet("data/pages", "directory", ()), 2)
    assert description == "Extracting 0 pages of pages in 2 chunk(s)"
    assert page_row(0, {"id": "a"})["readability_chars"] == 0
    rows = PageRows(1)
    rows(0, {"id": "a"})
    rows(1, {"id": "b"})
    assert [row["id"] for row in rows.rows] == ["a"]
