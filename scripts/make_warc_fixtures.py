#!/usr/bin/env python3
"""Write the WARC test fixtures of the extract step into ``tests/data/warc/``.

    python scripts/make_warc_fixtures.py

The HTTP payloads are the six real pages of ``tests/data/pages/`` (their gunzipped
bytes, in manifest order) plus a few small synthetic bodies defined here. Every
record is serialised with warcio's ``WARCWriter`` (uncompressed), with a fixed
``WARC-Record-ID`` (uuid5 of the file and record name) and a fixed ``WARC-Date``
(2024-05-01T12:00:00Z plus the record's index in seconds); the gzip files are made
here with ``gzip.compress(..., mtime=0)`` (one member per record, or one member for
the whole file), so two runs write the same bytes. ``expected.json`` describes what
was written, from the construction data (the files are not parsed back). See
``tests/data/warc/README.md``.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import shutil
import struct
import sys
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

import brotli
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "tests" / "data" / "pages"
TARGET = ROOT / "tests" / "data" / "warc"

#: The first record's WARC-Date; record k of a file is dated k seconds later.
BASE_DATE = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)

#: Namespace of the record ids: uuid5(namespace, "<file>/<record name>").
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/content-selection/tests/data/warc")

USER_AGENT = "content-selection-fixtures/1.0"
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

#: The windows-1252 page: no meta charset, the HTTP header alone gives the encoding.
CAFE_URL = "https://www.example.org/cafe"
CAFE_HTML = (
    "<html><head><title>Café</title></head><body><article>"
    + "".join(
        f"<p>Paragraph {i}: the café served crème brûlée to naïve visitors, “quoted” and déjà vu, while the city "
        "council debated schools, roads and the library budget at length.</p>"
        for i in range(12)
    )
    + "</article></body></html>"
)

REDIRECT_URL = "http://www.example.org/old-article"
REDIRECT_LOCATION = "https://www.example.org/new-article"
REDIRECT_HTML = (
    '<html><head><title>301 Moved Permanently</title></head><body><h1>Moved Permanently</h1><p>See <a href="'
    + REDIRECT_LOCATION
    + '">the new address</a>.</p></body></html>'
)
MISSING_URL = "https://www.example.org/missing-article"
MISSING_HTML = (
    "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1>"
    "<p>The requested URL was not found on this server.</p></body></html>"
)
IMAGE_URL = "https://www.example.org/logo.png"


def png_bytes(width: int = 4, height: int = 4) -> bytes:
    """A small valid RGB PNG (a grey gradient), built without an image library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(16 * (x + y) % 256 for x in range(width) for _ in range(3)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


@dataclass(frozen=True)
class Page:
    index: int  # 1-based, manifest order
    id: str
    url: str
    html: bytes


def load_pages() -> list[Page]:
    pages = []
    lines = (PAGES / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines, start=1):
        entry = json.loads(line)
        html = gzip.decompress((PAGES / entry["path"]).read_bytes())
        pages.append(Page(index, entry["id"], entry["url"], html))
    return pages


def sha1_digest(data: bytes) -> str:
    """A WARC digest value, as warcio writes it (base32 SHA-1)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def http_date(date: datetime) -> str:
    return format_datetime(date, usegmt=True)


def warc_date(date: datetime) -> str:
    return date.strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_body(body: bytes, content_encoding: str | None) -> bytes:
    if content_encoding is None:
        return body
    if content_encoding == "gzip":
        return gzip.compress(body, compresslevel=9, mtime=0)
    if content_encoding == "br":
        return brotli.compress(body)
    if content_encoding == "deflate":
        return zlib.compress(body, 9)  # HTTP "deflate" is the zlib format (RFC 9110 8.4.1.2)
    raise ValueError(content_encoding)


@dataclass
class Record:
    """One written record: its uncompressed bytes and what expected.json says of it."""

    data: bytes
    meta: dict
    header_len: int  # bytes of the WARC header block (up to and including the blank line)


@dataclass
class WarcFile:
    """The records of one fixture file, in order."""

    name: str
    records: list[Record] = field(default_factory=list)

    def record_id(self, name: str) -> str:
        return f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, f'{self.name}/{name}')}>"

    def next_date(self) -> datetime:
        return BASE_DATE + timedelta(seconds=len(self.records))

    def _write(self, record, meta: dict) -> Record:
        out = BytesIO()
        WARCWriter(out, gzip=False, warc_version="1.1").write_record(record)
        data = out.getvalue()
        rec = Record(data, meta, data.index(b"\r\n\r\n") + 4)
        self.records.append(rec)
        return rec

    @staticmethod
    def _meta(record_type, record_id, uri, date, status=None, content_type=None, encoding=None, note=None, **extra):
        meta = {
            "type": record_type,
            "record_id": record_id,
            "target_uri": uri,
            "date": warc_date(date),
            "http_status": status,
            "content_type": content_type,
            "content_encoding": encoding,
            "note": note,
        }
        meta.update(extra)
        return meta

    def warcinfo(self) -> Record:
        date = self.next_date()
        rid = self.record_id("warcinfo")
        fields = (
            b"software: content-selection scripts/make_warc_fixtures.py (warcio WARCWriter)\r\n"
            b"format: WARC File Format 1.1\r\n"
            b"conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n"
            b"description: test fixture of the extract step (pages: scrapinghub/article-extraction-benchmark, MIT)\r\n"
        )
        headers = {"WARC-Type": "warcinfo", "WARC-Record-ID": rid, "WARC-Date": warc_date(date)}
        headers["WARC-Filename"] = self.name
        record = WARCWriter(BytesIO(), gzip=False, warc_version="1.1").create_warc_record(
            "", "warcinfo", payload=BytesIO(fields), length=len(fields), warc_headers_dict=headers
        )
        return self._write(record, self._meta("warcinfo", rid, None, date))

    def request(self, name: str, url: str, concurrent_to: str) -> Record:
        date = self.next_date()
        rid = self.record_id(f"{name}/request")
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        http = StatusAndHeaders(
            f"GET {target} HTTP/1.1",
            [("Host", parts.netloc), ("User-Agent", USER_AGENT), ("Accept", "text/html,*/*;q=0.8")],
            is_http_request=True,
        )
        headers = {
            "WARC-Type": "request",
            "WARC-Record-ID": rid,
            "WARC-Date": warc_date(date),
            "WARC-Target-URI": url,
            "WARC-Concurrent-To": concurrent_to,
        }
        record = WARCWriter(BytesIO(), gzip=False, warc_version="1.1").create_warc_record(
            url, "request", http_headers=http, warc_headers_dict=headers
        )
        return self._write(record, self._meta("request", rid, url, date, note="GET request"))

    def response(
        self,
        name: str,
        url: str,
        body: bytes,
        *,
        status: str = "200 OK",
        content_type: str | None = "text/html; charset=utf-8",
        content_encoding: str | None = None,
        extra_http: list[tuple[str, str]] = (),
        note: str | None = None,
        article: bool = False,
        page_id: str | None = None,
        html_text: str | None = None,
        html_charset: str = "utf-8",
    ) -> Record:
        date = self.next_date()
        rid = self.record_id(f"{name}/response")
        payload = encode_body(body, content_encoding)
        http_headers = [("Date", http_date(date))]
        if content_type is not None:
            http_headers.append(("Content-Type", content_type))
        if content_encoding is not None:
            http_headers.append(("Content-Encoding", content_encoding))
        http_headers.append(("Content-Length", str(len(payload))))
        http_headers.extend(extra_http)
        http = StatusAndHeaders(status, http_headers, protocol="HTTP/1.1")
        headers = {"WARC-Type": "response", "WARC-Record-ID": rid, "WARC-Date": warc_date(date), "WARC-Target-URI": url}
        record = WARCWriter(BytesIO(), gzip=False, warc_version="1.1").create_warc_record(
            url, "response", payload=BytesIO(payload), length=len(payload), http_headers=http, warc_headers_dict=headers
        )
        extra = {"page_id": page_id, "payload_length": len(payload), "article": article}
        if article:
            # The HTML as text (Content-Encoding undone, the right charset), re-encoded as UTF-8.
            extra["html_charset"] = html_charset
            extra["html_utf8_sha256"] = hashlib.sha256(html_text.encode("utf-8")).hexdigest()
        status_code = int(status.split(" ", 1)[0])
        meta = self._meta("response", rid, url, date, status_code, content_type, content_encoding, note, **extra)
        return self._write(record, meta)

    def page_pair(self, page: Page, **kwargs) -> Record:
        """A request and a 200 response for a real page; returns the response."""
        name = f"page{page.index}"
        self.request(name, page.url, self.record_id(f"{name}/response"))
        kwargs.setdefault("article", True)
        html_text = page.html.decode("utf-8")
        return self.response(name, page.url, page.html, page_id=page.id, html_text=html_text, **kwargs)

    def revisit(self, name: str, original: Record, page: Page) -> Record:
        date = self.next_date()
        rid = self.record_id(f"{name}/revisit")
        http = StatusAndHeaders(
            "200 OK",
            [
                ("Date", http_date(date)),
                ("Content-Type", "text/html; charset=utf-8"),
                ("Content-Length", str(len(page.html))),
            ],
            protocol="HTTP/1.1",
        )
        headers = {
            "WARC-Type": "revisit",
            "WARC-Record-ID": rid,
            "WARC-Date": warc_date(date),
            "WARC-Target-URI": page.url,
            "WARC-Profile": REVISIT_PROFILE,
            "WARC-Refers-To": original.meta["record_id"],
            "WARC-Refers-To-Target-URI": original.meta["target_uri"],
            "WARC-Refers-To-Date": original.meta["date"],
            "WARC-Payload-Digest": sha1_digest(page.html),
        }
        record = WARCWriter(BytesIO(), gzip=False, warc_version="1.1").create_warc_record(
            page.url, "revisit", http_headers=http, warc_headers_dict=headers
        )
        note = "revisit (identical payload digest) of page 1: HTTP 200 header block, no payload; not an article"
        meta = self._meta("revisit", rid, page.url, date, 200, "text/html; charset=utf-8", None, note)
        meta.update({"page_id": page.id, "payload_length": 0, "article": False})
        return self._write(record, meta)

    def metadata(self, name: str, refers_to: Record) -> Record:
        date = self.next_date()
        rid = self.record_id(f"{name}/metadata")
        fields = b"fetchTimeMs: 250\r\nvia: fixture\r\n"
        url = refers_to.meta["target_uri"]
        headers = {
            "WARC-Type": "metadata",
            "WARC-Record-ID": rid,
            "WARC-Date": warc_date(date),
            "WARC-Target-URI": url,
            "WARC-Refers-To": refers_to.meta["record_id"],
        }
        record = WARCWriter(BytesIO(), gzip=False, warc_version="1.1").create_warc_record(
            url, "metadata", payload=BytesIO(fields), length=len(fields), warc_headers_dict=headers
        )
        return self._write(record, self._meta("metadata", rid, url, date, note="metadata (warc-fields) of page 1"))

    # ------------------------------------------------------------------ output

    def uncompressed(self) -> bytes:
        return b"".join(r.data for r in self.records)

    def describe(self, compression: str, members: list[bytes] | None = None) -> dict:
        """expected.json's entry: the records, with their offsets in this file."""
        records = []
        offset = 0
        raw_offset = 0
        for i, rec in enumerate(self.records):
            meta = dict(rec.meta)
            meta["uncompressed_offset"] = raw_offset
            if compression == "none":
                meta["offset"] = raw_offset
            elif compression == "per-record gzip":
                meta["offset"] = offset
                meta["member_length"] = len(members[i])
                offset += len(members[i])
            else:
                meta["offset"] = None  # one gzip member: no record starts at a byte of the file
            meta["warc_content_length"] = int(_warc_header(rec, b"Content-Length"))
            meta["block_length"] = len(rec.data) - rec.header_len - 4
            raw_offset += len(rec.data)
            records.append(meta)
        entry = {"compression": compression, "records": records}
        entry["articles"] = [m["record_id"] for m in records if m.get("article")]
        for m in records:
            m.pop("article", None)
        return entry


def _warc_header(rec: Record, name: bytes) -> bytes:
    for line in rec.data[: rec.header_len].split(b"\r\n"):
        if line.lower().startswith(name.lower() + b":"):
            return line.split(b":", 1)[1].strip()
    raise KeyError(name)


def set_content_length(rec: Record, value: int) -> None:
    """Rewrite the WARC Content-Length of an already written record (nothing else changes)."""
    old = _warc_header(rec, b"Content-Length")
    head = rec.data[: rec.header_len]
    needle = b"\r\nContent-Length: " + old + b"\r\n"
    assert head.count(needle) == 1, head
    head = head.replace(needle, b"\r\nContent-Length: " + str(value).encode() + b"\r\n")
    rec.data = head + rec.data[rec.header_len :]
    rec.header_len = len(head)


def gzip_member(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


# ---------------------------------------------------------------------- the files


def build_pages(name: str, pages: list[Page]) -> WarcFile:
    f = WarcFile(name)
    f.warcinfo()
    p1, p2, p3, p4, p5, p6 = pages
    first = f.page_pair(p1, note="plain text/html; charset=utf-8")
    f.page_pair(p2, content_encoding="gzip", note="Content-Encoding gzip (payload gzip-compressed, mtime 0)")
    f.page_pair(p3, content_encoding="br", note="Content-Encoding br (brotli)")
    f.page_pair(p4, content_encoding="deflate", note="Content-Encoding deflate (zlib format)")
    f.page_pair(
        p5,
        content_type="application/xhtml+xml",
        note="Content-Type application/xhtml+xml without charset, and no meta charset in the page: UTF-8 by default",
    )
    f.page_pair(
        p6,
        content_type="text/html; charset=x-klingon",
        note="bad charset label x-klingon, no meta charset in the page: the fallback must decode it as UTF-8",
    )
    f.response(
        "redirect",
        REDIRECT_URL,
        REDIRECT_HTML.encode(),
        status="301 Moved Permanently",
        extra_http=[("Location", REDIRECT_LOCATION)],
        note="redirect (301 + Location, text/html body): skipped",
    )
    f.response(
        "missing",
        MISSING_URL,
        MISSING_HTML.encode(),
        status="404 Not Found",
        note="404 with a text/html body: skipped (not 200)",
    )
    f.response("image", IMAGE_URL, png_bytes(), content_type="image/png", note="200 image/png: skipped (not HTML)")
    f.revisit("page1-revisit", first, p1)
    f.metadata("page1-metadata", first)
    f.response(
        "page1-again",
        p1.url,
        p1.html,
        note="duplicate URL of page 1, later WARC-Date, same bytes: extracted again as its own article",
        article=True,
        page_id=p1.id,
        html_text=p1.html.decode("utf-8"),
    )
    f.response(
        "cafe",
        CAFE_URL,
        CAFE_HTML.encode("windows-1252"),
        content_type="text/html; charset=windows-1252",
        note="windows-1252 body, no meta charset: the HTTP charset decides",
        article=True,
        html_text=CAFE_HTML,
        html_charset="windows-1252",
    )
    return f


def plain_responses(f: WarcFile, pages: list[Page]) -> list[Record]:
    f.warcinfo()
    return [
        f.response(f"page{p.index}", p.url, p.html, page_id=p.id, html_text=p.html.decode("utf-8"), article=True)
        for p in pages
    ]


def write_all(target: Path) -> dict[str, bytes]:
    pages = load_pages()
    assert len(pages) == 6, len(pages)
    files: dict[str, bytes] = {}
    expected: dict[str, dict] = {
        "_about": (
            "What scripts/make_warc_fixtures.py wrote, from its construction data. Per file: compression, the "
            "records in file order, and 'articles': the record ids that should become articles (200 + HTML type, "
            "in order; for the damaged files the undamaged ones: whether a reader reaches them depends on the "
            "library, see README.md). offset: where the record starts in the file (per-record gzip: its member's "
            "start; null for one-member gzip); uncompressed_offset: where it starts in the uncompressed WARC stream; "
            "warc_content_length: the WARC Content-Length header as written; block_length: the true length of the "
            "block; payload_length: the HTTP body as stored (Content-Encoding applied); html_charset: the encoding "
            "that decodes that body (Content-Encoding undone) correctly; html_utf8_sha256: sha256 of the decoded "
            "HTML text encoded as UTF-8; date: the WARC-Date; content_type/content_encoding: the HTTP headers."
        )
    }

    # 1. pages.warc, pages.warc.gz (one member per record), pages_whole.warc.gz (one member): the same records,
    # the same bytes once decompressed (the warcinfo's WARC-Filename is pages.warc in all three).
    f = build_pages("pages.warc", pages)
    members = [gzip_member(r.data) for r in f.records]
    files["pages.warc"] = f.uncompressed()
    files["pages.warc.gz"] = b"".join(members)
    files["pages_whole.warc.gz"] = gzip_member(f.uncompressed())
    expected["pages.warc"] = f.describe("none")
    expected["pages.warc.gz"] = f.describe("per-record gzip", members)
    expected["pages_whole.warc.gz"] = f.describe("whole-file gzip")

    # 2. truncated.warc.gz: warcinfo, pages 1 and 2, then page 3 cut in the middle of its gzip member.
    f = WarcFile("truncated.warc.gz")
    recs = plain_responses(f, pages[:3])
    members = [gzip_member(r.data) for r in f.records]
    full = members[-1]
    members[-1] = full[: len(full) // 2]
    decompressed = zlib.decompressobj(wbits=31).decompress(members[-1])
    assert recs[-1].header_len + 1000 < len(decompressed) < len(recs[-1].data) - 1000, "cut not inside the payload"
    recs[-1].meta["note"] = (
        f"truncated: the gzip member is cut after {len(members[-1])} of its {len(full)} bytes (no gzip trailer); "
        f"about {len(decompressed)} of the record's {len(recs[-1].data)} uncompressed bytes can be recovered"
    )
    recs[-1].meta["article"] = False
    files[f.name] = b"".join(members)
    expected[f.name] = f.describe("per-record gzip", members)

    # 3. wrong_length.warc: page 2's Content-Length 1000 short; wrong_length_long.warc: page 3's too long.
    f = WarcFile("wrong_length.warc")
    recs = plain_responses(f, pages[:3])
    true_len = len(recs[1].data) - recs[1].header_len - 4
    set_content_length(recs[1], true_len - 1000)
    recs[1].meta["note"] = f"content-length 1000 short: the header says {true_len - 1000}, the block is {true_len}"
    recs[1].meta["article"] = False
    files[f.name] = f.uncompressed()
    expected[f.name] = f.describe("none")

    f = WarcFile("wrong_length_long.warc")
    recs = plain_responses(f, pages[:3])
    true_len = len(recs[2].data) - recs[2].header_len - 4
    rest = true_len + 4  # the bytes after the header block: the block and the closing CRLF CRLF
    set_content_length(recs[2], rest + 5000)
    recs[2].meta["note"] = (
        f"content-length 5000 long: the header says {rest + 5000}, the block is {true_len} and only {rest} bytes "
        "follow the header block (the block and CRLF CRLF) before the end of the file"
    )
    recs[2].meta["article"] = False
    files[f.name] = f.uncompressed()
    expected[f.name] = f.describe("none")

    # 4. not a WARC: the first page's HTML, raw and gzipped.
    note = f"not a WARC: the HTML bytes of page {pages[0].id} ({pages[0].url})"
    files["not_a_warc.warc"] = pages[0].html
    files["not_a_warc.warc.gz"] = gzip_member(pages[0].html)
    expected["not_a_warc.warc"] = {"compression": "none", "records": [], "articles": [], "note": note}
    expected["not_a_warc.warc.gz"] = {"compression": "gzip", "records": [], "articles": [], "note": note}

    files["expected.json"] = (json.dumps(expected, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    target.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (target / name).write_bytes(data)
    shutil.copyfile(PAGES / "LICENSE", target / "LICENSE")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--target", type=Path, default=TARGET, help=f"default {TARGET}")
    args = parser.parse_args(argv)
    files = write_all(args.target)
    for name, data in files.items():
        print(f"{len(data):>8}  {args.target / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
