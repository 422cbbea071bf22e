"""WARC input of the extract step (selection_extraction.warc), on the committed fixtures of ``tests/data/warc``.

The fixtures (``scripts/make_warc_fixtures.py``) hold the six real pages of
``tests/data/pages`` as WARC responses, in three forms (plain, gzip per record,
gzipped whole), every kind of record to skip, every transport decoding case, and
damaged files; ``expected.json`` says what the script wrote, from its own data.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import brotli
import pytest

from selection_core.batch import dump_batch
from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_extraction import ExtractionSettings, InvalidPagesError, extract_pages, find_pages
from selection_extraction.extractors import default_extractors
from selection_extraction.page_chunks import extract_chunk, page_chunks
from selection_extraction.pages import Page, PageReadings
from selection_extraction.settings import DEFAULT_MAX_PAGE_BYTES, PageTooLargeError
from selection_extraction.warc import RECORD_KINDS, WarcStream, dechunk, decoded_payload
from tests.support import DATA, PAGES, ROOT
from tests.support.chunks import join_chunks

WARCS = DATA / "warc"
EXPECTED = json.loads((WARCS / "expected.json").read_text(encoding="utf-8"))
PAGES_FILES = ("pages.warc", "pages.warc.gz", "pages_whole.warc.gz")


def expected_kind(record: dict[str, Any]) -> str:
    """The kind a record written by the fixtures script must be counted as (the rule of docs/extraction.md)."""
    if record["type"] != "response":
        return record["type"]
    status = record["http_status"]
    if 300 <= status < 400:
        return "redirect"
    if status != 200:
        return "not_200"
    mime = record["content_type"].split(";")[0].strip().lower()
    return "html" if mime in ("text/html", "application/xhtml+xml") else "not_html"


def texts(doc: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """Each article's three texts, titles and errors, by id."""
    return {
        a["id"]: tuple((a[n][TEXT_FIELDS[n]], a[n].get("title"), a[n]["error"]) for n in EXTRACTORS)
        for a in doc["articles"]
    }


def read_all(source: Path, label: str | None = None) -> tuple[list[tuple[Page, Any]], dict[str, int] | None]:
    """The pages of ``source`` with their bytes (or why they cannot be read), read once; the records by kind."""
    readings = PageReadings(find_pages(source, label))
    return list(readings), readings.warc_records


def pages_of(source: Path) -> list[Page]:
    return [page for page, _ in read_all(source)[0]]


@pytest.fixture(scope="module")
def pages_doc() -> dict[str, Any]:
    return extract_pages(find_pages(WARCS / "pages.warc.gz"), ExtractionSettings(workers=2)).doc


# --------------------------------------------------------------------------- which records, and where they are


@pytest.mark.parametrize("name", PAGES_FILES)
def test_the_html_responses_become_the_pages_in_file_order(name: str) -> None:
    pages = pages_of(WARCS / name)
    written = EXPECTED[name]
    assert find_pages(WARCS / name).kind == "warc"
    assert [p.warc.record_id for p in pages if p.warc] == written["articles"]
    assert [p.id for p in pages] == written["articles"]
    by_id = {r["record_id"]: r for r in written["records"]}
    assert [p.url for p in pages] == [by_id[i]["target_uri"] for i in written["articles"]]
    assert [p.warc.date for p in pages if p.warc] == [by_id[i]["date"] for i in written["articles"]]


@pytest.mark.parametrize("name", PAGES_FILES)
def test_every_record_is_counted_by_kind(name: str) -> None:
    counts = dict.fromkeys(RECORD_KINDS, 0)
    for record in EXPECTED[name]["records"]:
        counts[expected_kind(record)] += 1
    assert read_all(WARCS / name)[1] == {k: v for k, v in counts.items() if v}


@pytest.mark.parametrize("name", PAGES_FILES)
def test_the_offsets_are_where_the_records_start_or_null_in_a_file_gzipped_whole(name: str) -> None:
    by_id = {r["record_id"]: r for r in EXPECTED[name]["records"]}
    offsets = [p.warc.offset for p in pages_of(WARCS / name) if p.warc]
    assert offsets == [by_id[p]["offset"] for p in EXPECTED[name]["articles"]]
    assert (None in offsets) == (name == "pages_whole.warc.gz")


def test_a_page_names_the_crawl_its_warcinfo_is_part_of() -> None:
    crawl = DATA / "crawl"
    expected = json.loads((crawl / "expected.json").read_text(encoding="utf-8"))
    key = next(iter(expected["warcs"]))
    pages = pages_of(crawl / key)
    assert pages and {p.warc.dump for p in pages if p.warc} == {expected["crawl"]}  # its isPartOf: CC-MAIN-2024-18
    # the test WARCs' warcinfo names no crawl
    assert {p.warc.dump for p in pages_of(WARCS / "pages.warc.gz") if p.warc} == {None}


def test_warcio_finds_each_record_again_at_its_offset() -> None:
    from warcio.archiveiterator import ArchiveIterator

    for name in ("pages.warc", "pages.warc.gz"):
        for page in pages_of(WARCS / name):
            assert page.warc is not None and page.warc.offset is not None
            with open(WARCS / name, "rb") as stream:
                stream.seek(page.warc.offset)
                record = next(iter(ArchiveIterator(stream)))
            assert record.rec_headers.get_header("WARC-Record-ID") == page.warc.record_id


def test_each_article_keeps_where_it_came_from(pages_doc: dict[str, Any]) -> None:
    first = pages_doc["articles"][0]
    assert list(first)[:7] == ["id", "url", "path", "warc_date", "warc_offset", "encoding", "encoding_source"]
    assert first["path"] == str(WARCS / "pages.warc.gz") and first["warc_date"] == "2024-05-01T12:00:02Z"
    assert pages_doc["extraction"]["input_kind"] == "warc"
    assert pages_doc["extraction"]["warc_records"] == read_all(WARCS / "pages.warc.gz")[1]


# --------------------------------------------------------------------------- the texts of the same bytes in a folder


def test_a_warc_gives_the_texts_of_the_same_html_bytes_in_a_folder(tmp_path: Path, pages_doc: dict[str, Any]) -> None:
    lines = []
    for number, (page, data) in enumerate(read_all(WARCS / "pages.warc.gz")[0]):
        file = tmp_path / f"{number:02d}.html"
        file.write_bytes(data)
        lines.append(json.dumps({"id": page.id, "url": page.url, "path": file.name, "encoding": page.encoding}))
    (tmp_path / "pages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    folder_doc = extract_pages(find_pages(tmp_path / "pages.jsonl"), ExtractionSettings(workers=2)).doc
    assert texts(folder_doc) == texts(pages_doc)
    assert [a["encoding"] for a in folder_doc["articles"]] == [a["encoding"] for a in pages_doc["articles"]]


def test_the_payloads_are_the_pages_bytes_with_every_encoding_undone() -> None:
    by_id = {r["record_id"]: r for r in EXPECTED["pages.warc.gz"]["records"]}
    real = {json.loads(line)["id"]: json.loads(line) for line in (PAGES / "manifest.jsonl").read_text().splitlines()}
    checked = 0
    for page, data in read_all(WARCS / "pages.warc.gz")[0]:
        written = by_id[page.warc.record_id] if page.warc else {}
        if written.get("page_id") in real:
            expected = gzip.decompress((PAGES / real[written["page_id"]]["path"]).read_bytes())
            assert data == expected, written["note"]
            checked += 1
    assert checked == 7  # the six pages, and page 1 again


def test_the_three_forms_of_one_archive_give_the_same_articles(pages_doc: dict[str, Any]) -> None:
    for name in ("pages.warc", "pages_whole.warc.gz"):
        doc = extract_pages(find_pages(WARCS / name), ExtractionSettings(workers=1)).doc
        assert texts(doc) == texts(pages_doc)


def test_the_transport_charset_decodes_a_page_without_a_meta_charset(pages_doc: dict[str, Any]) -> None:
    cafe = pages_doc["articles"][-1]
    assert cafe["encoding_source"] == "transport" and cafe["encoding"] == "cp1252"
    assert "crème brûlée" in cafe["trafilatura"]["text"] and "“quoted”" in cafe["trafilatura"]["text"]
    klingon = next(a for a in pages_doc["articles"] if a["url"] == pages_doc["articles"][5]["url"])
    assert klingon["encoding_source"] != "transport"


def test_the_batch_is_the_same_whatever_the_workers_and_the_chunks(pages_doc: dict[str, Any]) -> None:
    page_set = find_pages(WARCS / "pages.warc.gz")
    one = extract_pages(page_set, ExtractionSettings(workers=1)).doc
    assert dump_batch(one) == dump_batch(pages_doc)
    for name in ("pages.warc.gz", "pages_whole.warc.gz"):
        whole = find_pages(WARCS / name)
        readings = PageReadings(whole, read_files=False)
        chunks = list(page_chunks(readings, 3, workers=2, time_limit_seconds=60.0))
        joined = join_chunks(readings, [extract_chunk(c) for c in chunks], default_extractors(), 60.0)
        alone = extract_pages(whole, ExtractionSettings(workers=1)).doc
        assert len(chunks) == 3 and dump_batch(joined.doc) == dump_batch(alone)


# --------------------------------------------------------------------------- damaged archives and bad inputs


def _by_url(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for article in doc["articles"]:
        found.setdefault(article["url"], []).append(article)
    return found


@pytest.mark.parametrize(
    ("name", "counts", "broken_message"),
    [
        pytest.param("truncated.warc.gz", {"warcinfo": 1, "html": 3}, "holds 16822 of the 35267", id="truncated-file"),
        # FastWARC cannot find the record after a Content-Length that is too short: it is counted as broken.
        pytest.param("wrong_length.warc", {"warcinfo": 1, "html": 2, "broken": 1}, "Content-Length", id="too-short"),
        pytest.param("wrong_length_long.warc", {"warcinfo": 1, "html": 3}, "of the 40271", id="too-long"),
    ],
)
def test_a_broken_record_is_an_error_article_and_the_good_ones_are_kept(
    name: str, counts: dict[str, int], broken_message: str, pages_doc: dict[str, Any]
) -> None:
    doc = extract_pages(find_pages(WARCS / name), ExtractionSettings(workers=1)).doc
    assert doc["extraction"]["warc_records"] == counts
    *good, broken = doc["articles"]
    errors = {broken[n]["error"] for n in EXTRACTORS}
    assert len(errors) == 1 and broken_message in errors.pop()
    assert broken["trafilatura"]["text"] == "" and doc["extraction"]["unreadable_pages"] == 1
    reference = _by_url(pages_doc)
    for article in good:
        assert (
            texts({"articles": [article]})[article["id"]]
            == texts({"articles": reference[article["url"]][:1]}).popitem()[1]
        )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(None, "empty file, not a WARC", id="empty"),
        pytest.param("not_a_warc.warc", "not a WARC file (it does not start with a WARC/1.x record)", id="html"),
        pytest.param(
            "not_a_warc.warc.gz", "not a WARC file (it does not start with a WARC/1.x record)", id="gzip-html"
        ),
        pytest.param(b"\x1f\x8bnot really gzip", "gzip data that cannot be decompressed", id="bad-gzip"),
    ],
)
def test_a_file_that_is_not_a_warc_is_refused_in_one_line(tmp_path: Path, content: Any, message: str) -> None:
    target = tmp_path / "input.warc.gz"
    if isinstance(content, str):
        shutil.copyfile(WARCS / content, target)
    else:
        target.write_bytes(content or b"")
    with pytest.raises(InvalidPagesError, match=re.escape(message)) as caught:
        find_pages(target)
    assert "\n" not in str(caught.value) and str(target) in str(caught.value)


@pytest.mark.slow
def test_the_command_refuses_a_non_warc_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "crawl.warc"
    shutil.copyfile(WARCS / "not_a_warc.warc", target)
    run = subprocess.run(
        [sys.executable, "-m", "selection_cli.main", "pipeline", str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 65 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "not a WARC file" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl.warc"]


def test_a_folder_and_a_manifest_of_warcs_list_their_records_in_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    shutil.copyfile(WARCS / "pages.warc.gz", tmp_path / "b" / "crawl.warc.gz")
    shutil.copyfile(PAGES / "manifest.jsonl", tmp_path / "ignored.jsonl")
    shutil.copyfile(next(PAGES.glob("*.html.gz")), tmp_path / "a.html.gz")
    folder, records = read_all(tmp_path)
    assert [p.path for p, _ in folder] == ["a.html.gz"] + ["b/crawl.warc.gz"] * 8
    assert records == read_all(WARCS / "pages.warc.gz")[1]
    manifest = tmp_path / "warcs.jsonl"
    manifest.write_text('{"path": "b/crawl.warc.gz"}\n{"path": "a.html.gz", "id": "a"}\n', encoding="utf-8")
    listed = pages_of(manifest)
    assert [p.id for p in listed] == [p.id for p, _ in folder[1:]] + ["a"]


def test_the_page_size_limit_applies_to_each_record(tmp_path: Path) -> None:
    doc = extract_pages(find_pages(WARCS / "pages.warc.gz"), ExtractionSettings(workers=1, max_page_bytes=40_000)).doc
    errors = [a["trafilatura"]["error"] or "" for a in doc["articles"]]
    assert any("PageTooLargeError" in e for e in errors) and not all(errors)


# --------------------------------------------------------------------------- one lying record does not end the file


def _warc(records: list[tuple[str, list[tuple[str, str]], bytes]], per_record: bool) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = io.BytesIO()
    writer = WARCWriter(out, gzip=per_record)
    for number, (url, headers, payload) in enumerate(records):
        http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
        warc_headers = {
            "WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-{number:012d}>",
            "WARC-Date": "2024-05-01T00:00:00Z",
        }
        writer.write_record(
            writer.create_warc_record(
                url, "response", payload=io.BytesIO(payload), http_headers=http, warc_headers_dict=warc_headers
            )
        )
    return out.getvalue() if per_record else gzip.compress(out.getvalue(), mtime=0)


ARTICLE = (
    b"<html><head><title>A</title></head><body><article>"
    + b"<p>The council said that it would open the new bridge to all of the people in the town by the end of the year."
    + b"</p>" * 6
    + b"</article></body></html>"
)


@pytest.mark.parametrize("per_record", [True, False], ids=["gzip-per-record", "gzipped-whole"])
def test_a_body_whose_content_encoding_lies_is_one_error_and_the_next_record_is_read(
    tmp_path: Path, per_record: bool
) -> None:
    html = [("Content-Type", "text/html; charset=utf-8")]
    target = tmp_path / "lies.warc.gz"
    target.write_bytes(
        _warc(
            [
                ("https://a.example/lies", [*html, ("Content-Encoding", "gzip")], ARTICLE),
                (
                    "https://a.example/chunked",
                    [*html, ("Transfer-Encoding", "chunked")],
                    b"10\r\n"
                    + ARTICLE[:16]
                    + b"\r\n"
                    + hex(len(ARTICLE) - 16)[2:].encode()
                    + b"\r\n"
                    + ARTICLE[16:]
                    + b"\r\n0\r\n\r\n",
                ),
                ("https://a.example/fine", html, ARTICLE),
            ],
            per_record,
        )
    )
    lies, chunked, fine = extract_pages(find_pages(target), ExtractionSettings(workers=1)).doc["articles"]
    assert "Content-Encoding gzip cannot be undone" in lies["readability"]["error"]
    assert chunked["trafilatura"]["error"] is None and chunked["trafilatura"]["text"] == fine["trafilatura"]["text"]
    assert fine["trafilatura"]["error"] is None and "new bridge" in fine["trafilatura"]["text"]


# --------------------------------------------------------------------------- decoding a payload


@pytest.mark.parametrize(
    ("stored", "transfer", "content"),
    [
        pytest.param(ARTICLE, None, None, id="plain"),
        pytest.param(gzip.compress(ARTICLE, mtime=0), None, "gzip", id="gzip"),
        pytest.param(gzip.compress(ARTICLE, mtime=0), None, "x-gzip", id="x-gzip"),
        pytest.param(
            gzip.compress(ARTICLE[:50], mtime=0) + gzip.compress(ARTICLE[50:], mtime=0), None, "gzip", id="gzip-members"
        ),
        pytest.param(zlib.compress(ARTICLE), None, "deflate", id="deflate-zlib"),
        pytest.param(zlib.compress(ARTICLE)[2:-4], None, "deflate", id="deflate-raw"),
        pytest.param(brotli.compress(ARTICLE), None, "br", id="br"),
        pytest.param(brotli.compress(gzip.compress(ARTICLE, mtime=0)), None, "gzip, br", id="gzip-then-br"),
        pytest.param(
            b"5\r\n"
            + ARTICLE[:5]
            + b"\r\n"
            + hex(len(ARTICLE) - 5)[2:].encode()
            + b"\r\n"
            + ARTICLE[5:]
            + b"\r\n0\r\n\r\n",
            "chunked",
            None,
            id="chunked",
        ),
    ],
)
def test_a_payload_is_decoded_back_to_the_page(stored: bytes, transfer: str | None, content: str | None) -> None:
    assert decoded_payload(stored, transfer, content, 10**6) == ARTICLE


@pytest.mark.parametrize(
    ("stored", "transfer", "content", "error"),
    [
        pytest.param(ARTICLE, None, "gzip", EOFError, id="gzip-that-is-not"),
        pytest.param(gzip.compress(ARTICLE, mtime=0)[:40], None, "gzip", EOFError, id="gzip-cut-off"),
        pytest.param(ARTICLE, None, "compress", EOFError, id="unknown-coding"),
        pytest.param(b"zz\r\n", "chunked", None, EOFError, id="bad-chunk-size"),
        pytest.param(b"ff\r\nabc", "chunked", None, EOFError, id="chunk-cut-off"),
        pytest.param(gzip.compress(b"x" * 10**6, mtime=0), None, "gzip", PageTooLargeError, id="decompression-bomb"),
        pytest.param(brotli.compress(b"x" * 10**6), None, "br", PageTooLargeError, id="brotli-bomb"),
        pytest.param(brotli.compress(ARTICLE)[:-4], None, "br", EOFError, id="brotli-cut-off"),
    ],
)
def test_a_payload_that_cannot_be_decoded_says_why(
    stored: bytes, transfer: str | None, content: str | None, error: type[Exception]
) -> None:
    with pytest.raises(error):
        decoded_payload(stored, transfer, content, 10_000)


def _brotli_bomb(size: int) -> bytes:
    """``size`` zero bytes compressed by brotli, compressed piece by piece (about 190 KB for 1 GiB)."""
    compressor = brotli.Compressor(quality=1)
    piece = bytes(1 << 20)
    return b"".join(compressor.process(piece) for _ in range(size >> 20)) + compressor.finish()


def test_a_brotli_bomb_is_a_page_too_large_and_the_warc_goes_on_in_bounded_memory(tmp_path: Path) -> None:
    html = [("Content-Type", "text/html; charset=utf-8")]
    target = tmp_path / "bomb.warc.gz"
    target.write_bytes(
        _warc(
            [
                ("https://a.example/before", html, ARTICLE),
                ("https://a.example/bomb", [*html, ("Content-Encoding", "br")], _brotli_bomb(1 << 30)),
                ("https://a.example/after", html, ARTICLE),
            ],
            per_record=True,
        )
    )
    # In a process of its own, so that its peak resident set is the extraction's alone: VmHWM, which starts again at
    # exec (ru_maxrss keeps the peak of the forked test process).
    script = (
        "import json, re, sys\n"
        "from pathlib import Path\n"
        "from selection_extraction import ExtractionSettings, extract_pages, find_pages\n"
        "doc = extract_pages(find_pages(sys.argv[1]), ExtractionSettings(workers=1)).doc\n"
        "errors = [a['trafilatura']['error'] for a in doc['articles']]\n"
        "peak = int(re.search(r'VmHWM:\\s+(\\d+) kB', Path('/proc/self/status').read_text())[1]) * 1024\n"
        "print(json.dumps({'errors': errors, 'peak': peak}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    before, bomb, after = result["errors"]
    assert before is None and after is None
    assert bomb is not None and "PageTooLargeError" in bomb and "once decoded" in bomb
    # The page size limit (64 MiB) and the process's own imports, far from the body's 1 GiB.
    assert result["peak"] < 512 * 2**20


def test_dechunk_keeps_the_body_and_drops_extensions_and_trailers() -> None:
    assert dechunk(b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n") == b"abcde"


def test_the_pages_expected_of_a_warc_come_from_the_bytes_read_and_are_exact_at_the_end() -> None:
    readings = PageReadings(find_pages(WARCS / "pages.warc"))
    seen = []
    for _ in readings:
        seen.append((readings.met, readings.expected()))
    assert [met for met, _ in seen] == list(range(1, 9)) and all(expected >= met for met, expected in seen)
    assert seen[0][1] > 1  # the first page, early in the file, expects more
    assert readings.expected() == 8


#: The start of an ARC file (version 1): its version block, as the Internet Archive wrote them before WARC.
ARC_HEAD = (
    b"filedesc://crawl.arc 0.0.0.0 20260101000000 text/plain 76\n"
    b"1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n\n"
)


@pytest.mark.parametrize("name", ["crawl.warc.gz.bad", "crawl", "crawl.json", "x.warc.gz.1"])
def test_a_warc_named_loosely_is_known_by_its_bytes(tmp_path: Path, name: str, pages_doc: dict[str, Any]) -> None:
    target = tmp_path / name
    shutil.copyfile(WARCS / "pages.warc.gz", target)
    doc = extract_pages(find_pages(target), ExtractionSettings(workers=1)).doc
    assert texts(doc) == texts(pages_doc)


@pytest.mark.parametrize("name", ["old.arc", "old.arc.gz", "old.warc.gz", "old.bin"])
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_an_arc_file_is_refused_in_words_that_say_what_it_is(tmp_path: Path, name: str, gzipped: bool) -> None:
    target = tmp_path / name
    target.write_bytes(gzip.compress(ARC_HEAD) if gzipped else ARC_HEAD)
    with pytest.raises(InvalidPagesError, match="an ARC file .* convert it to WARC first") as caught:
        find_pages(target)
    assert "\n" not in str(caught.value) and str(target) in str(caught.value)


def test_a_warc_named_loosely_inside_a_folder_or_a_manifest_is_read_as_one(tmp_path: Path, pages_doc) -> None:
    folder = tmp_path / "crawl"
    folder.mkdir()
    shutil.copyfile(WARCS / "pages.warc.gz", folder / "part-0001.bin")
    (folder / "notes.txt").write_text("not a page, not an archive")
    by_folder = extract_pages(find_pages(folder), ExtractionSettings(workers=1)).doc
    manifest = tmp_path / "list.jsonl"
    manifest.write_text(json.dumps({"path": str(folder / "part-0001.bin")}) + "\n")
    by_manifest = extract_pages(find_pages(manifest), ExtractionSettings(workers=1)).doc
    assert texts(by_folder) == texts(by_manifest) == texts(pages_doc)


def _read(item: object) -> tuple[str, str] | bytes:
    return (type(item).__name__, str(item)) if isinstance(item, BaseException) else item  # type: ignore[return-value]


@pytest.mark.parametrize(
    "name",
    [
        "pages.warc",
        "pages.warc.gz",
        "pages_whole.warc.gz",
        "truncated.warc.gz",
        "wrong_length.warc",
        "wrong_length_long.warc",
    ],  # fmt: skip
)
def test_a_read_taken_up_after_any_page_gives_the_pages_after_it_and_the_same_counts(name: str) -> None:
    stream = WarcStream(WARCS / name, name, DEFAULT_MAX_PAGE_BYTES)
    items = list(stream)
    streamed = [((i.id, i.url, i.charset, i.ref), _read(i.payload)) for i in items]
    assert [page.id for page, _ in read_all(WARCS / name, name)[0]] == [i.id for i in items]
    for k, item in enumerate(items):  # taken up after any page: the pages after it, and the same counts at the end
        again = WarcStream(WARCS / name, name, DEFAULT_MAX_PAGE_BYTES, item.after)
        rest = [((i.id, i.url, i.charset, i.ref), _read(i.payload)) for i in again]
        assert rest == streamed[k + 1 :] and again.kinds == stream.kinds, (name, k)


# --------------------------------------------------------------------------- web archives the project did not write

WARCIO_FILES = sorted(p for p in (DATA / "warcio").iterdir() if p.name not in ("LICENSE", "README.md"))


def _warcio_pages(path: Path) -> tuple[list[str], bool]:
    """The ids of the HTML 200 responses warcio reads (ARC records as WARC), and whether it stopped on an error."""
    from warcio.archiveiterator import ArchiveIterator

    found = []
    try:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream, arc2warc=True):
                http = record.http_headers
                if record.rec_type == "response" and http is not None and http.get_statuscode() == "200":
                    mime = (http.get_header("Content-Type") or "").split(";")[0].strip().lower()
                    if mime in ("text/html", "application/xhtml+xml"):
                        found.append(record.rec_headers.get_header("WARC-Record-ID"))
    except Exception:  # noqa: BLE001 - warcio gives up on a damaged file; what it read before counts
        return found, True
    return found, False


@pytest.mark.parametrize("path", WARCIO_FILES, ids=lambda p: p.name)
def test_warcio_s_own_files_give_the_pages_warcio_finds_or_one_line(path: Path) -> None:
    expected, stopped = _warcio_pages(path)
    if path.name.endswith((".arc", ".arc.gz")):  # an ARC file, which warcio converts: refused, saying what it is
        with pytest.raises(InvalidPagesError, match="an ARC file") as caught:
            read_all(path)
        assert "\n" not in str(caught.value) and "warcio recompress" in str(caught.value)
    elif not expected and not stopped:  # no HTML response at all
        with pytest.raises(InvalidPagesError, match="no HTML response") as caught:
            read_all(path)
        assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    else:  # the same pages; past where warcio stops on damage, FastWARC may read one more
        readings, records = read_all(path)
        ids = [page.id for page, _ in readings]
        assert ids[: len(expected)] == expected and (stopped or ids == expected)
        assert records is not None and records["html"] == len(ids)
