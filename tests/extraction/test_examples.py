"""Small contracts of the extraction helpers, one example each."""

from __future__ import annotations

from pathlib import Path

from selection_extraction.artifacts import PageRows, page_row, progress_description
from selection_extraction.decode import declared_charset, decode_html, web_codecs
from selection_extraction.extracted import NO_STATS, ExtractionStats, dump_record
from selection_extraction.extractors import library_version
from selection_extraction.inbox import failures_message, is_page_set_name
from selection_extraction.pages import Page, PageSet, WarcFile, page_stem
from selection_extraction.paths import extracted_path, record_path
from selection_extraction.pool import FunctionRef, error_text
from selection_extraction.settings import PageTooLargeError
from selection_extraction.warc import WARC_SUFFIXES, charset_label, strip_suffix


def test_function_ref_calls_the_named_function_and_compares_by_name() -> None:
    ref = FunctionRef("os.path", "basename")
    assert ref("/a/b.html") == "b.html"
    assert ref == FunctionRef("os.path", "basename")
    assert hash(ref) == hash(FunctionRef("os.path", "basename"))


def test_error_text_is_one_line() -> None:
    assert error_text(ValueError("bad\n  value")) == "ValueError: bad value"


def test_the_counts_of_two_chunks_add_up_as_one_run() -> None:
    s = ExtractionStats(2, 1, {"readability": 1}, {}, 0, ("x",))
    both = NO_STATS + s + s
    assert (both.pages, both.errors["readability"], both.network_attempts) == (4, 2, ("x", "x"))


def test_the_record_of_a_jsonl_batch_is_its_root_without_articles() -> None:
    record = dump_record({"extraction": {"pages": 0}, "articles": []})
    assert record == b'{\n  "extraction": {\n    "pages": 0\n  }\n}\n'


def test_artifact_examples() -> None:
    description = progress_description(PageSet("data/pages", "directory", ()), chunked=True)
    assert description == "Extracting 0 pages of pages in chunks"
    warc = PageSet("day.warc.gz", "warc", (WarcFile("day.warc.gz", Path("day.warc.gz")),))
    assert progress_description(warc) == "Extracting the pages of day.warc.gz"
    assert warc.contents() == "1 web archive"
    page = Page("a", None, "a.html", Path("a.html"))
    assert PageSet("x", "directory", (page, page, warc.entries[0], warc.entries[0])).contents() == (
        "2 pages and 2 web archives"
    )
    assert page_row(0, {"id": "a"})["readability_chars"] == 0
    rows = PageRows(1)
    rows(0, {"id": "a"})
    rows(1, {"id": "b"})
    assert [row["id"] for row in rows.rows] == ["a"]


def test_decoding_examples() -> None:
    assert (
        decode_html(b'<meta charset="windows-1252"><p>caf\xe9</p>').html == '<meta charset="windows-1252"><p>café</p>'
    )
    assert decode_html('<meta charset="iso-8859-1"><p>café</p>'.encode()).source.value == "valid-utf-8"
    assert decode_html(b"\xef\xbb\xbf<p>x</p>").source.value == "bom"
    replaced = decode_html(b'<meta charset="utf-8"><p>caf\xe9</p>')
    assert replaced.html.endswith("caf\ufffd</p>") and replaced.source.value == "utf-8-with-replacement"
    meta = b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
    assert declared_charset(meta) == "ISO-8859-1"
    assert declared_charset(b"<p>no declaration</p>") is None
    assert web_codecs("ISO-8859-1") == ("cp1252", "iso8859-1")
    assert web_codecs("utf-16") == ("utf-8",)
    assert web_codecs("no-such-charset") == ()


def test_inbox_examples() -> None:
    assert (is_page_set_name("CC-NEWS-1.warc.gz"), is_page_set_name("list.JSONL"), is_page_set_name("a.html")) == (
        True,
        True,
        False,
    )
    assert failures_message(["/in/a.jsonl: line 1 is not JSON"], 3) == (
        "1 of 3 page set(s) failed, the others were extracted: /in/a.jsonl: line 1 is not JSON"
    )


def test_page_and_warc_stems() -> None:
    assert (page_stem("a.HTML.gz"), page_stem("b.htm"), page_stem("c.json")) == ("a", "b", None)
    assert (strip_suffix("CC-NEWS-1.WARC.gz", WARC_SUFFIXES), strip_suffix("a.html", WARC_SUFFIXES)) == (
        "CC-NEWS-1",
        None,
    )
    assert (charset_label('"UTF-8" '), charset_label(""), charset_label(None)) == ("UTF-8", None, None)


def test_batch_paths_beside_the_input() -> None:
    sources = ("data/pages", "data/pages.jsonl", "crawl/CC-NEWS-1.warc.gz")
    assert [extracted_path(p).as_posix() for p in sources] == [
        "data/pages_extracted.json",
        "data/pages_extracted.json",
        "crawl/CC-NEWS-1_extracted.json",
    ]
    assert record_path("out/crawl_extracted.jsonl").as_posix() == "out/crawl_extracted.extraction.json"
    assert record_path("out/crawl_extracted.json") is None


def test_a_page_too_large_says_what_to_do() -> None:
    assert str(PageTooLargeError.over(10, " once decoded")) == (
        "larger than 10 bytes once decoded; raise max_page_bytes to extract it"
    )
    assert library_version("no-such-distribution-for-content-selection") == "not installed"
