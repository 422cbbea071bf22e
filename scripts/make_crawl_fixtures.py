#!/usr/bin/env python3
"""Write a small web crawl in Common Crawl's layout into ``tests/data/crawl/``, or a larger one elsewhere.

    python scripts/make_crawl_fixtures.py                                            # tests/data/crawl
    python scripts/make_crawl_fixtures.py --target DIR --warcs 16 --pages-per-warc 125
    python scripts/make_crawl_fixtures.py --target DIR --warcs 4 --pages-per-warc 125 --scale 4

The test data of ``content-selection crawl`` (one WARC = one unit of work). The folder is a bucket root:
``crawl-data/<crawl>/segments/<segment>/warc/CC-MAIN-<start>-<end>-<part>.warc.gz`` (2 segments by default,
the WARCs split evenly between them) and ``crawl-data/<crawl>/warc.paths.gz``, the gzipped list of the WARC keys
relative to the bucket root, one a line, sorted, as Common Crawl publishes it. Each WARC is shaped like Common
Crawl's (WARC/1.0): a ``warcinfo`` record, then per capture a ``request``, a ``response`` (``WARC-Concurrent-To``
the request) and a ``metadata`` record (``WARC-Concurrent-To`` the response), each record its own gzip member.

The 200 HTML responses are the real pages of ``tests/data/aeb-pages`` (gunzipped, unchanged), taken round-robin in
file-name order; a page's URL is its ``<link rel=canonical>``, else its ``og:url``, else its URL in the folder's
manifest, else ``https://news.example/<sha256>``; copy k > 0 of a page (a crawl with more pages than the folder)
gets ``?copy=k`` (``&copy=k`` after a query). Between the pages, small synthetic captures defined here: 404s,
301/302 redirects and non-HTML responses (robots.txt, ads.txt, a PDF, a JPEG), in a pattern that cycles over the
WARCs (``EXTRA_PLAN``). ``--scale N`` makes one WARC (``--scaled-warc``, default the first) N times larger.

Deterministic: fixed record ids (uuid5 of the WARC key and the record's place), fixed dates (from the segment's
time window), gzip ``mtime`` 0, records serialised here byte by byte (digests computed here); two runs write the
same bytes (the compressed bytes depend on the zlib version only). ``expected.json`` describes what was written,
from the construction data (the files are not parsed back); ``bad/not-a-warc.warc.gz`` is gzipped plain text named
like a WARC, not listed in ``warc.paths.gz``. Benchmarks import :func:`write_crawl`. See
``tests/data/crawl/README.md``.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import html as html_lib
import json
import math
import re
import sys
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
AEB_PAGES = ROOT / "tests" / "data" / "aeb-pages"
TARGET = ROOT / "tests" / "data" / "crawl"

CRAWL = "CC-MAIN-2024-18"
#: Segment k covers the 3 hours from FIRST_WINDOW + 3k hours (its WARCs' names and dates).
FIRST_WINDOW = datetime(2024, 4, 12, 0, 0, 0, tzinfo=UTC)
WINDOW = timedelta(hours=3)
FIXTURE_WARCS = 4
FIXTURE_PAGES_PER_WARC = 6
SEGMENTS = 2
BAD_KEY = "bad/not-a-warc.warc.gz"

#: Namespace of the record ids: uuid5(namespace, "<WARC key>/<record>").
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/content-selection/tests/data/crawl")

#: gzip level of the records (zlib's default, as crawlers write them; 9 is slower for a large crawl).
GZIP_LEVEL = 6

USER_AGENT = "content-selection-fixtures/1.0 (scripts/make_crawl_fixtures.py)"
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
SERVERS = ("nginx", "Apache", "cloudflare", "nginx/1.18.0 (Ubuntu)", "Microsoft-IIS/10.0", "Varnish")

#: The synthetic captures of WARC w: EXTRA_PLAN[w % 4] (repeated --scale times in the scaled WARC), spread
#: evenly between its pages.
EXTRA_PLAN: tuple[tuple[str, ...], ...] = (
    ("robots", "moved", "missing"),
    ("pdf", "found"),
    ("jpeg", "missing", "ads", "moved"),
    ("missing", "found", "robots"),
)

#: What each synthetic capture counts as (expected.json's capture kinds).
EXTRA_KINDS = {
    "robots": "not_html",
    "ads": "not_html",
    "pdf": "not_html",
    "jpeg": "not_html",
    "moved": "redirect",
    "found": "redirect",
    "missing": "not_found",
}

#: expected.json's capture kinds, and the record kind the repository's WARC reader counts each response as.
CAPTURE_KINDS = {"html": "html", "not_found": "not_200", "redirect": "redirect", "not_html": "not_html"}

#: The reader's record kinds in the order it lists them (selection_extraction.warc.RECORD_KINDS, those used here).
READER_KINDS = ("html", "warcinfo", "request", "metadata", "redirect", "not_200", "not_html")

#: An 8x8 colour gradient, JPEG (baseline, JFIF), made once with Pillow and kept here so that no image library
#: is needed.
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1x"
    "eXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAAR"
    "CAAIAAgDASIAAhEBAxEB/8QAFQABAQAAAAAAAAAAAAAAAAAAAAP/xAAXEAEBAQEAAAAAAAAAAAAAAAAABSIx/8QAFQEBAQAAAAAAAAAAAAAA"
    "AAAAAgT/xAAbEQACAQUAAAAAAAAAAAAAAAADBAABEhMhMf/aAAwDAQACEQMRAD8AhPhcwAnKyS7saDZcNNz/2Q=="
)

NOT_FOUND_HTML = (
    "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>"
    "<body><h1>Not found</h1><p>The page you requested does not exist.</p></body></html>\n"
)


def pdf_bytes(title: str) -> bytes:
    """A small valid one-page PDF showing ``title`` (ASCII), its cross-reference offsets computed."""
    text = title.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode("ascii")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


# ---------------------------------------------------------------------- the pages


@dataclass(frozen=True)
class Source:
    """One page of tests/data/aeb-pages."""

    name: str  # the file name, <sha256>.html.gz
    url: str
    html: bytes
    charset: str | None  # "UTF-8" when the bytes decode as UTF-8 (all 181 do), else None: no charset is sent


_TAG = re.compile(rb"<(link|meta)\b([^>]*)>", re.IGNORECASE)
_ATTR = re.compile(rb"""([\w:.-]+)\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+)""")


def _attributes(text: bytes) -> dict[str, str]:
    attrs = {}
    for name, value in _ATTR.findall(text):
        value = value.strip(b"\"'")
        attrs.setdefault(name.decode("ascii").lower(), html_lib.unescape(value.decode("utf-8", "replace")).strip())
    return attrs


def declared_url(html: bytes, base: str | None) -> str | None:
    """The page's ``<link rel=canonical>`` href, else its ``og:url`` content (absolute http(s)), else None."""
    canonical = og_url = None
    for tag, text in _TAG.findall(html):
        attrs = _attributes(text)
        if tag.lower() == b"link" and "canonical" in attrs.get("rel", "").lower().split():
            canonical = canonical or attrs.get("href")
        elif tag.lower() == b"meta" and attrs.get("property", "").lower() == "og:url":
            og_url = og_url or attrs.get("content")
    for candidate in (canonical, og_url):
        if candidate:
            url = urljoin(base, candidate) if base else candidate
            if urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc:
                return url
    return None


def clean_url(url: str) -> str:
    """The URL without its fragment, percent-encoded where it is not ASCII (it goes into the request line)."""
    parts = urlsplit(url)
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~-._")
    query = quote(parts.query, safe="/%:@!$&'()*+,;=?~-._")
    return urlunsplit((parts.scheme, parts.netloc.encode("idna").decode("ascii"), path, query, ""))


def load_sources(pages: Path = AEB_PAGES) -> list[Source]:
    """The pages of ``pages`` in file-name order, each with a distinct URL."""
    manifest: dict[str, str] = {}
    if (pages / "manifest.jsonl").exists():
        for line in (pages / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            manifest[entry["path"]] = entry["url"]
    sources = []
    taken: set[str] = set()
    for path in sorted(pages.glob("*.html.gz")):
        html = gzip.decompress(path.read_bytes())
        sha = path.name.removesuffix(".html.gz")
        known = manifest.get(path.name)
        url = clean_url(declared_url(html, known) or known or f"https://news.example/{sha}")
        if url in taken:  # two pages declaring the same URL: the second gets its own
            url = f"https://news.example/{sha}"
        taken.add(url)
        try:
            html.decode("utf-8")
            charset = "UTF-8"
        except UnicodeDecodeError:
            charset = None
        sources.append(Source(path.name, url, html, charset))
    if not sources:
        raise SystemExit(f"no .html.gz pages in {pages}")
    return sources


def with_copy(url: str, copy: int) -> str:
    """The URL of copy ``copy`` of a page: the URL itself for copy 0, else with ``copy=<copy>`` in its query."""
    if copy == 0:
        return url
    parts = urlsplit(url)
    query = f"{parts.query}&copy={copy}" if parts.query else f"copy={copy}"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


# ---------------------------------------------------------------------- the plan


def _pick(text: str, choices: tuple[str, ...]) -> str:
    return choices[zlib.crc32(text.encode()) % len(choices)]


def ip_address(host: str) -> str:
    """A documentation address (RFC 5737) that stands for the host."""
    crc = zlib.crc32(host.encode())
    return f"{_pick(host, ('192.0.2', '198.51.100', '203.0.113'))}.{1 + crc % 254}"


@dataclass(frozen=True)
class Capture:
    """One fetch: its URL, the HTTP response, and what expected.json says of it."""

    kind: str  # a key of CAPTURE_KINDS
    url: str
    status: str  # "200 OK"
    headers: tuple[tuple[str, str], ...]  # without Date (set when the WARC is written)
    body: bytes
    payload_type: str | None  # WARC-Identified-Payload-Type
    source: str | None = None  # the aeb page's file name


@dataclass
class WarcPlan:
    """One WARC file: where it goes and its captures, in order."""

    key: str  # relative to the bucket root
    index: int  # in the crawl (its part number)
    slot: int  # its place in its segment
    window: datetime  # its segment's start
    captures: list[Capture] = field(default_factory=list)

    @property
    def filename(self) -> str:
        return self.key.rsplit("/", 1)[1]

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(CAPTURE_KINDS, 0)
        for capture in self.captures:
            counts[capture.kind] += 1
        return counts

    def reader_records(self) -> dict[str, int]:
        """The records by kind as selection_extraction's WARC reading counts them (zero counts left out, as it does)."""
        records = dict.fromkeys(READER_KINDS, 0)
        records["warcinfo"] = 1
        records["request"] = records["metadata"] = len(self.captures)
        for kind, n in self.counts().items():
            records[CAPTURE_KINDS[kind]] += n
        return {kind: n for kind, n in records.items() if n}


_GZIPPED_LENGTHS: dict[str, int] = {}


def html_capture(source: Source, url: str) -> Capture:
    """A 200 response with the page, headers as a crawler stores them (half of the pages were sent gzipped:
    Common Crawl stores the payload decoded and keeps the original coding and length as X-Crawler-* headers)."""
    content_type = "text/html" if source.charset is None else f"text/html; charset={_pick(url, ('UTF-8', 'utf-8'))}"
    headers = [("Server", _pick(urlsplit(url).netloc, SERVERS)), ("Content-Type", content_type)]
    headers += [("Connection", "keep-alive"), ("Vary", "Accept-Encoding"), ("Cache-Control", "max-age=300, public")]
    if zlib.crc32(url.encode()) % 2 == 0:
        if source.name not in _GZIPPED_LENGTHS:
            _GZIPPED_LENGTHS[source.name] = len(gzip.compress(source.html, GZIP_LEVEL, mtime=0))
        headers += [
            ("X-Crawler-Content-Encoding", "gzip"),
            ("X-Crawler-Content-Length", str(_GZIPPED_LENGTHS[source.name])),
        ]
    headers.append(("Content-Length", str(len(source.html))))
    return Capture("html", url, "200 OK", tuple(headers), source.html, "text/html", source.name)


def extra_capture(name: str, n: int, near: str) -> Capture:
    """Synthetic capture ``name`` (a key of EXTRA_KINDS), number ``n`` in the crawl, on the host of URL ``near``."""
    parts = urlsplit(near)
    site = f"{parts.scheme}://{parts.netloc}"
    server = ("Server", _pick(parts.netloc, SERVERS))
    kind = EXTRA_KINDS[name]
    if name == "robots":
        body = f"User-agent: *\nDisallow: /search\nDisallow: /account/\n\nSitemap: {site}/sitemap.xml\n".encode()
        headers = (server, ("Content-Type", "text/plain"), ("Content-Length", str(len(body))))
        return Capture(kind, f"{site}/robots.txt", "200 OK", headers, body, "text/plain")
    if name == "ads":
        body = b"# ads.txt\nadexchange.example, 1234, DIRECT\nvideo-ads.example, 5678, RESELLER\n"
        headers = (server, ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))))
        return Capture(kind, f"{site}/ads.txt", "200 OK", headers, body, "text/plain")
    if name == "pdf":
        body = pdf_bytes(f"Press release {n}")
        headers = (
            server,
            ("Content-Type", "application/pdf"),
            ("Accept-Ranges", "bytes"),
            ("Content-Length", str(len(body))),
        )
        return Capture(kind, f"{site}/media/press-release-{n}.pdf", "200 OK", headers, body, "application/pdf")
    if name == "jpeg":
        headers = (
            server,
            ("Content-Type", "image/jpeg"),
            ("Cache-Control", "max-age=31536000"),
            ("Content-Length", str(len(JPEG))),
        )
        return Capture(kind, f"{site}/images/photo-{n}.jpg", "200 OK", headers, JPEG, "image/jpeg")
    if name == "moved":  # a trailing-slash redirect, with the small body servers add
        location = f"{site}/news/{n}/"
        body = (
            '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>301 Moved Permanently</title>\n'
            f'</head><body>\n<h1>Moved Permanently</h1>\n<p>The document has moved <a href="{location}">here</a>.</p>\n'
            "</body></html>\n"
        ).encode()
        headers = (
            server,
            ("Location", location),
            ("Content-Type", "text/html; charset=iso-8859-1"),
            ("Content-Length", str(len(body))),
        )
        return Capture(kind, f"{site}/news/{n}", "301 Moved Permanently", headers, body, "text/html")
    if name == "found":  # a temporary redirect with an empty body
        headers = (server, ("Location", f"{site}/"), ("Content-Length", "0"))
        return Capture(kind, f"{site}/go/{n}", "302 Found", headers, b"", None)
    if name == "missing":
        body = NOT_FOUND_HTML.encode()
        headers = (server, ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body))))
        return Capture(kind, f"{site}/article/{n}/deleted", "404 Not Found", headers, body, "text/html")
    raise ValueError(name)


def segment_name(k: int) -> str:
    """Segment k's folder name, in Common Crawl's form (<13 digits>.<2 digits>)."""
    return f"{1712296817001 + k}.{11 * (k + 1) % 100:02d}"


def plan_crawl(
    sources: list[Source],
    warcs: int,
    pages_per_warc: int,
    *,
    segments: int = SEGMENTS,
    scale: int = 1,
    scaled_warc: int = 0,
    crawl: str = CRAWL,
) -> list[WarcPlan]:
    """The WARCs of a crawl and their captures (nothing written)."""
    if warcs < 1 or pages_per_warc < 0 or segments < 1 or scale < 1:
        raise ValueError("warcs, segments and scale must be at least 1, pages_per_warc at least 0")
    if scale != 1 and not 0 <= scaled_warc < warcs:
        raise ValueError(f"scaled_warc must be a WARC of the crawl (0 to {warcs - 1}), got {scaled_warc}")
    per_segment = math.ceil(warcs / segments)
    plans = []
    page = extra = 0  # counters over the crawl
    for w in range(warcs):
        k, slot = divmod(w, per_segment)
        start = FIRST_WINDOW + k * WINDOW
        stamp = f"{start:%Y%m%d%H%M%S}-{start + WINDOW:%Y%m%d%H%M%S}"
        key = f"crawl-data/{crawl}/segments/{segment_name(k)}/warc/CC-MAIN-{stamp}-{w:05d}.warc.gz"
        plan = WarcPlan(key, w, slot, start)
        factor = scale if w == scaled_warc else 1
        pages = []
        for _ in range(pages_per_warc * factor):
            source = sources[page % len(sources)]
            pages.append(html_capture(source, with_copy(source.url, page // len(sources))))
            page += 1
        names = EXTRA_PLAN[w % len(EXTRA_PLAN)] * factor
        # extra j goes after page (j + 1) * len(pages) // (len(names) + 1)
        after = [(j + 1) * len(pages) // (len(names) + 1) for j in range(len(names))]
        j = 0
        for i in range(len(pages) + 1):
            while j < len(names) and after[j] == i:
                near = pages[max(i - 1, 0)].url if pages else "https://news.example/"
                plan.captures.append(extra_capture(names[j], extra, near))
                extra += 1
                j += 1
            if i < len(pages):
                plan.captures.append(pages[i])
        plans.append(plan)
    return plans


# ---------------------------------------------------------------------- the records


def sha1_digest(data: bytes) -> str:
    """A WARC digest value (base32 SHA-1), as Common Crawl writes them."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def warc_date(date: datetime) -> str:
    return date.strftime("%Y-%m-%dT%H:%M:%SZ")


def warc_record(headers: list[tuple[str, str]], block: bytes) -> bytes:
    """A WARC/1.0 record: the headers, with Content-Length inserted after the first three (Common Crawl's order:
    WARC-Type, WARC-Date, WARC-Record-ID, Content-Length, Content-Type, ...), the block, CRLF CRLF."""
    headers = [*headers[:3], ("Content-Length", str(len(block))), *headers[3:]]
    head = "WARC/1.0\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
    return head.encode("utf-8") + block + b"\r\n\r\n"


def http_block(start_line: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    head = start_line + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
    return head.encode("latin-1") + body


def warcinfo_fields(plan: WarcPlan, crawl: str) -> bytes:
    fields = [
        ("isPartOf", crawl),
        ("publisher", "content-selection test data (in the shape of Common Crawl's, not from Common Crawl)"),
        (
            "description",
            "test crawl of content-selection; HTML pages from scrapinghub/article-extraction-benchmark (MIT licence)",
        ),
        ("hostname", f"fixture-{plan.index % 8}.crawl.example"),
        ("software", "content-selection scripts/make_crawl_fixtures.py"),
        ("format", "WARC File Format 1.0"),
        ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.0/"),
    ]
    return "".join(f"{name}: {value}\r\n" for name, value in fields).encode("utf-8")


def warc_records(plan: WarcPlan, crawl: str) -> Iterator[bytes]:
    """The serialised records of one WARC, in order."""

    def record_id(name: str) -> str:
        return f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, f'{plan.key}/{name}')}>"

    first = plan.window + timedelta(seconds=61 * plan.slot % 3600)
    step = max(1, min(5, (WINDOW.seconds - 3600) // (len(plan.captures) + 1)))  # within the window
    info_id = record_id("warcinfo")
    yield warc_record(
        [
            ("WARC-Type", "warcinfo"),
            ("WARC-Date", warc_date(first)),
            ("WARC-Record-ID", info_id),
            ("Content-Type", "application/warc-fields"),
            ("WARC-Filename", plan.filename),
        ],
        warcinfo_fields(plan, crawl),
    )
    for i, capture in enumerate(plan.captures):
        date = first + timedelta(seconds=step * (i + 1))
        parts = urlsplit(capture.url)
        ip = ip_address(parts.netloc)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request_id, response_id = record_id(f"{i}/request"), record_id(f"{i}/response")
        request = http_block(
            f"GET {target} HTTP/1.1",
            [
                ("User-Agent", USER_AGENT),
                ("Accept", ACCEPT),
                ("Accept-Language", "en-US,en;q=0.5"),
                ("Accept-Encoding", "br,gzip"),
                ("Host", parts.netloc),
                ("Connection", "Keep-Alive"),
            ],
        )
        yield warc_record(
            [
                ("WARC-Type", "request"),
                ("WARC-Date", warc_date(date)),
                ("WARC-Record-ID", request_id),
                ("Content-Type", "application/http; msgtype=request"),
                ("WARC-Warcinfo-ID", info_id),
                ("WARC-IP-Address", ip),
                ("WARC-Target-URI", capture.url),
            ],
            request,
        )
        response = http_block(
            f"HTTP/1.1 {capture.status}", [("Date", format_datetime(date, usegmt=True)), *capture.headers], capture.body
        )
        headers = [
            ("WARC-Type", "response"),
            ("WARC-Date", warc_date(date)),
            ("WARC-Record-ID", response_id),
            ("Content-Type", "application/http; msgtype=response"),
            ("WARC-Warcinfo-ID", info_id),
            ("WARC-Concurrent-To", request_id),
            ("WARC-IP-Address", ip),
            ("WARC-Target-URI", capture.url),
            ("WARC-Payload-Digest", sha1_digest(capture.body)),
            ("WARC-Block-Digest", sha1_digest(response)),
        ]
        if capture.payload_type is not None:
            headers.append(("WARC-Identified-Payload-Type", capture.payload_type))
        yield warc_record(headers, response)
        fields = f"fetchTimeMs: {40 + zlib.crc32(capture.url.encode()) % 900}\r\n"
        if capture.kind == "html":
            fields += "charset-detected: UTF-8\r\n"
        yield warc_record(
            [
                ("WARC-Type", "metadata"),
                ("WARC-Date", warc_date(date)),
                ("WARC-Record-ID", record_id(f"{i}/metadata")),
                ("Content-Type", "application/warc-fields"),
                ("WARC-Warcinfo-ID", info_id),
                ("WARC-Concurrent-To", response_id),
                ("WARC-Target-URI", capture.url),
            ],
            fields.encode("utf-8"),
        )


def gzip_member(data: bytes) -> bytes:
    return gzip.compress(data, GZIP_LEVEL, mtime=0)


def paths_key(crawl: str = CRAWL) -> str:
    return f"crawl-data/{crawl}/warc.paths.gz"


def _write_plans(target: Path, plans: list[WarcPlan], crawl: str) -> list[str]:
    keys = sorted(plan.key for plan in plans)
    for plan in plans:
        path = target / plan.key
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            for record in warc_records(plan, crawl):
                out.write(gzip_member(record))
    # WARCs of an earlier run with other parameters would be listed by a crawl of the prefix: removed
    for stale in (target / "crawl-data" / crawl / "segments").glob("*/warc/*.warc.gz"):
        if stale.relative_to(target).as_posix() not in keys:
            stale.unlink()
    (target / paths_key(crawl)).write_bytes(gzip_member("".join(f"{key}\n" for key in keys).encode("ascii")))
    return keys


def write_crawl(
    target: Path,
    warcs: int,
    pages_per_warc: int,
    *,
    segments: int = SEGMENTS,
    scale: int = 1,
    scaled_warc: int = 0,
    crawl: str = CRAWL,
    pages: Path = AEB_PAGES,
) -> list[str]:
    """Write a crawl in Common Crawl's layout into ``target`` (a bucket root): ``warcs`` WARCs over ``segments``
    segments, each with ``pages_per_warc`` HTML pages (WARC ``scaled_warc`` with ``scale`` times as many pages and
    synthetic captures) and its synthetic captures, and ``crawl-data/<crawl>/warc.paths.gz``. The pages of
    ``pages`` are used round-robin, copy k > 0 of a page with ``copy=k`` in its URL's query, so every page URL of
    the crawl is distinct. Returns the WARC keys relative to ``target``, sorted (the lines of warc.paths.gz)."""
    plans = plan_crawl(
        load_sources(pages),
        warcs,
        pages_per_warc,
        segments=segments,
        scale=scale,
        scaled_warc=scaled_warc,
        crawl=crawl,
    )
    return _write_plans(target, plans, crawl)


# ---------------------------------------------------------------------- expected.json and the bad file


def expected_json(plans: list[WarcPlan], crawl: str) -> dict:
    warcs = {}
    for plan in sorted(plans, key=lambda p: p.key):
        html = [c for c in plan.captures if c.kind == "html"]
        warcs[plan.key] = {
            "captures": plan.counts(),
            "records": plan.reader_records(),
            "html_urls": [c.url for c in html],
            "html_sources": [c.source for c in html],
        }
    totals = dict.fromkeys(CAPTURE_KINDS, 0)
    for plan in plans:
        for kind, n in plan.counts().items():
            totals[kind] += n
    return {
        "_about": (
            "What scripts/make_crawl_fixtures.py wrote, from its construction data (the files are not parsed back). "
            "Keys are relative to this folder, the bucket root. paths: the key of warc.paths.gz, which lists the "
            "keys of 'warcs' in this (sorted) order. Per WARC: captures by kind (html: 200 text/html pages; "
            "not_found: 404; redirect: 301/302; not_html: 200 responses of other types), each capture being a "
            "request, a response and a metadata record after the file's warcinfo record; records: the records by "
            "kind as selection_extraction's WARC reading counts them (PageSet.warc_records); html_urls: the "
            "WARC-Target-URI of the HTML pages in file order; html_sources: the file of tests/data/aeb-pages each "
            "page's HTTP body is (gunzipped). not_warcs: files named like WARCs that are not."
        ),
        "crawl": crawl,
        "paths": paths_key(crawl),
        "warcs": warcs,
        "totals": totals,
        "not_warcs": [BAD_KEY],
    }


BAD_TEXT = (
    "This is not a WARC file.\n\n"
    "It is plain text, gzipped, named like a WARC file of the test crawl, for the tests of bad input: "
    "a WARC reader must refuse it (it does not start with a WARC/1.x record).\n"
    "It is not listed in crawl-data/CC-MAIN-2024-18/warc.paths.gz.\n"
)


def write_all(
    target: Path,
    warcs: int = FIXTURE_WARCS,
    pages_per_warc: int = FIXTURE_PAGES_PER_WARC,
    *,
    segments: int = SEGMENTS,
    scale: int = 1,
    scaled_warc: int = 0,
) -> list[Path]:
    """The crawl, expected.json and the bad file; returns the files written."""
    plans = plan_crawl(load_sources(), warcs, pages_per_warc, segments=segments, scale=scale, scaled_warc=scaled_warc)
    keys = _write_plans(target, plans, CRAWL)
    expected = expected_json(plans, CRAWL)
    (target / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (target / BAD_KEY).parent.mkdir(parents=True, exist_ok=True)
    (target / BAD_KEY).write_bytes(gzip_member(BAD_TEXT.encode("utf-8")))
    return [target / key for key in [paths_key(CRAWL), *keys, "expected.json", BAD_KEY]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--target", type=Path, default=TARGET, help=f"the bucket root to write (default {TARGET})")
    parser.add_argument("--warcs", type=int, default=FIXTURE_WARCS, help=f"WARC files (default {FIXTURE_WARCS})")
    parser.add_argument(
        "--pages-per-warc",
        type=int,
        default=FIXTURE_PAGES_PER_WARC,
        help=f"HTML pages per WARC (default {FIXTURE_PAGES_PER_WARC})",
    )
    parser.add_argument("--segments", type=int, default=SEGMENTS, help=f"segments (default {SEGMENTS})")
    parser.add_argument("--scale", type=int, default=1, help="how many times larger one WARC is (default 1)")
    parser.add_argument("--scaled-warc", type=int, default=0, help="which WARC --scale applies to (default 0)")
    args = parser.parse_args(argv)
    files = write_all(
        args.target,
        args.warcs,
        args.pages_per_warc,
        segments=args.segments,
        scale=args.scale,
        scaled_warc=args.scaled_warc,
    )
    for path in files:
        print(f"{path.stat().st_size:>10}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
