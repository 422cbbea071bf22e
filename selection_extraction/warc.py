"""Pages from web archives: the HTML responses of a WARC file with their payloads, read once, as a stream."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Final, NamedTuple

from selection_core.errors import SelectionError, missing_extra
from selection_extraction.pool import error_text
from selection_extraction.settings import PageTooLargeError
from selection_storage.stores import Location, store

#: File name endings of WARC files, matched case-insensitively.
WARC_SUFFIXES: Final[tuple[str, ...]] = (".warc.gz", ".warc")

#: The content types of the responses that become pages.
HTML_CONTENT_TYPES: Final[frozenset[str]] = frozenset({"text/html", "application/xhtml+xml"})

#: The kinds of records a scan counts, in the order the counts are written.
RECORD_KINDS: Final[tuple[str, ...]] = (
    *("html", "warcinfo", "request", "metadata", "revisit", "resource", "conversion", "continuation"),
    *("redirect", "not_200", "not_html", "not_http", "broken", "unknown"),
)

#: How a WARC file starts (after gunzipping).
_MAGIC = b"WARC/"


class NotAWarcError(ValueError):
    """A file named like a WARC (or listed as one) is not a WARC file."""


@dataclass(frozen=True)
class WarcRecordRef:
    """Where one page's record lies in its WARC file (``offset`` None in a file gzipped whole; ``length`` by the
    headers; ``broken`` why the record cannot be read; ``dump`` the crawl the last ``warcinfo`` before it names,
    its ``isPartOf``)."""

    ordinal: int
    offset: int | None
    record_id: str
    date: str | None
    length: int
    broken: str | None = None
    dump: str | None = None


def strip_suffix(name: str, suffixes: tuple[str, ...]) -> str | None:
    """The name without the first of ``suffixes`` it ends with (any case), or None."""
    lower = name.lower()
    for suffix in suffixes:
        if lower.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def warc_stem(name: str) -> str | None:
    """The name without its ``.warc`` or ``.warc.gz`` suffix, or None."""
    return strip_suffix(name, WARC_SUFFIXES)


def is_warc_name(name: str) -> bool:
    """Whether a file name ends in ``.warc`` or ``.warc.gz`` (any case)."""
    return warc_stem(name) is not None


#: How an ARC file (the Internet Archive's format before WARC) starts: its version block's URL.
_ARC_MAGIC = b"filedesc://"


#: How much of an object is fetched to tell a web archive by its first bytes (not a whole read-ahead block).
SNIFF_BYTES: Final[int] = 64 << 10


def _first_bytes(path: Location) -> bytes | None:
    """The file's first bytes, gunzipped if gzip (None: gzip data that cannot be decompressed); a store's failure
    is raised as it is."""
    with store(path).open(block_size=SNIFF_BYTES) as raw:
        head = raw.read(2)
        raw.seek(0)
        try:
            return (gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw).read(len(_ARC_MAGIC))
        except SelectionError:
            raise
        except (OSError, EOFError, zlib.error):
            return None


def archive_kind(path: Location) -> str | None:
    """What the file's first bytes (gunzipped if gzip) say it is: ``"warc"``, ``"arc"``, or None; whatever its
    name (objects and crawl files are often named loosely)."""
    start = _first_bytes(path) or b""
    if start.startswith(_MAGIC):
        return "warc"
    return "arc" if start == _ARC_MAGIC else None


def arc_refusal(shown: str) -> NotAWarcError:
    """The one-line refusal of an ARC file."""
    return NotAWarcError(
        f"{shown}: an ARC file (the Internet Archive's format before WARC), which the extract step does not read; "
        f"convert it to WARC first (warcio recompress {shown} pages.warc.gz)"
    )


def check_is_warc(path: Location, shown: str) -> None:
    """Refuse (:class:`NotAWarcError`) a file that does not start with a WARC record (gunzipped if gzip)."""
    start = _first_bytes(path)
    if start is None:
        raise NotAWarcError(
            f"{shown}: not a WARC file (gzip data that cannot be decompressed); give a .warc or .warc.gz file"
        )
    if not start:
        raise NotAWarcError(f"{shown}: empty file, not a WARC; give a .warc or .warc.gz file with records")
    if start == _ARC_MAGIC:
        raise arc_refusal(shown)
    if not start.startswith(_MAGIC):
        raise NotAWarcError(
            f"{shown}: not a WARC file (it does not start with a WARC/1.x record); "
            "give a .warc or .warc.gz file, a folder of pages or a manifest"
        )


def _iterate(stream: Any) -> Any:
    try:
        from fastwarc.warc import ArchiveIterator
    except ImportError:
        raise missing_extra("reading web archives", "fastwarc") from None  # type: ignore[misc]

    # Payloads are decoded per record: FastWARC's decoding raises inside the iterator on a lying Content-Encoding.
    return ArchiveIterator(stream, parse_http=True, auto_decode="none", fsspec_args=False)


class _Break(NamedTuple):
    """Where a file stops parsing as WARC records, and why."""

    error: BaseException


def _records(stream: Any) -> Iterator[Any]:
    """The records of a WARC stream, then a :class:`_Break` if the rest of it does not parse; a store's failure
    (not the archive's) is raised: the run fails, a retry may cure it."""
    records = iter(_iterate(stream))
    while True:
        try:
            record = next(records)
        except StopIteration:
            return
        except SelectionError:
            raise
        except (OSError, ValueError) as exc:
            yield _Break(exc)
            return
        yield record


def charset_label(value: str | None) -> str | None:
    """The charset of a ``Content-Type`` header without quotes and spaces, or None."""
    label = (value or "").strip().strip('"').strip("'").strip()
    return label or None


def dechunk(data: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked payload; EOFError when the chunks are malformed or cut off."""
    body = bytearray()
    position = 0
    while True:
        end = data.find(b"\r\n", position)
        if end < 0:
            raise EOFError("the chunked payload is cut off inside a chunk size line")
        size_text = data[position:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise EOFError(f"the chunked payload has a bad chunk size {size_text[:20]!r}") from None
        if size == 0:
            return bytes(body)
        start = end + 2
        if start + size > len(data):
            raise EOFError("the chunked payload is cut off inside a chunk")
        body += data[start : start + size]
        position = start + size + 2


def decoded_payload(stored: bytes, transfer: str | None, content: str | None, max_bytes: int) -> bytes:
    """A response's payload with its transfer and content codings undone; EOFError for a coding that cannot be
    undone, PageTooLargeError over ``max_bytes``."""
    data = stored
    if transfer is not None and "chunked" in transfer.lower():
        data = dechunk(data)
    codings = [c.strip().lower() for c in (content or "").split(",") if c.strip()]
    for coding in reversed(codings):  # the last coding applied is undone first
        try:
            data = _undo(coding, data, max_bytes)
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise EOFError(f"its Content-Encoding {coding} cannot be undone ({error_text(exc)})") from None
        if len(data) > max_bytes:
            raise PageTooLargeError.over(max_bytes, " once decoded")
    return data


def _undo(coding: str, data: bytes, max_bytes: int) -> bytes:
    if coding in ("identity", "none"):
        return data
    if coding in ("gzip", "x-gzip"):
        return _inflate(data, 16 + zlib.MAX_WBITS, max_bytes)
    if coding == "deflate":  # zlib-wrapped, as the standard says, or raw, as some servers send
        try:
            return _inflate(data, zlib.MAX_WBITS, max_bytes)
        except zlib.error:
            return _inflate(data, -zlib.MAX_WBITS, max_bytes)
    if coding == "br":
        return _unbrotli(data, max_bytes)
    raise ValueError(f"unknown coding {coding!r}")


def _inflate(data: bytes, wbits: int, max_bytes: int) -> bytes:
    """zlib/gzip data (every gzip member), decompressed to at most ``max_bytes + 1`` bytes."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits)
        out += inflater.decompress(data, max_bytes + 1 - len(out))
        if len(out) > max_bytes:
            break
        if not inflater.eof:
            raise EOFError("the compressed data is cut off")
        data = inflater.unused_data if wbits > 16 else b""
    return bytes(out)


def _unbrotli(data: bytes, max_bytes: int) -> bytes:
    """Brotli data decompressed to at most about ``max_bytes + 1`` bytes (the output stops growing there)."""
    import brotli  # the extract extra's (output_buffer_limit since brotli 1.2)

    decompressor = brotli.Decompressor()
    try:
        out = bytes(decompressor.process(data, output_buffer_limit=max_bytes + 1))
    except brotli.error as exc:
        raise ValueError(str(exc)) from None
    if len(out) <= max_bytes and not decompressor.is_finished():
        raise EOFError("the compressed data is cut off")
    return out


def _kind(record: Any) -> str:
    kind = str(record.record_type)
    if kind != "response":
        return kind if kind in RECORD_KINDS else "unknown"
    headers = record.http_headers if record.is_http else None
    status = None if headers is None else headers.status_code
    if status is None:
        return "not_http"
    if 300 <= status < 400:
        return "redirect"
    if status != 200:
        return "not_200"
    content_type = (record.http_content_type or "").strip().lower()
    return "html" if content_type in HTML_CONTENT_TYPES else "not_html"


def _payload_length(record: Any) -> int:
    total = 0
    while True:
        piece = record.reader.read(1 << 16)
        if not piece:
            return total
        total += len(piece)


#: Most bytes of a ``warcinfo`` record read for its fields.
_WARCINFO_BYTES: Final[int] = 64 << 10


def _is_part_of(record: Any) -> str | None:
    """The ``isPartOf`` field of a ``warcinfo`` record's ``application/warc-fields`` (Common Crawl's crawl name)."""
    try:
        fields = record.reader.read(_WARCINFO_BYTES)
    except (OSError, ValueError):
        return None
    for line in bytes(fields).decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == "isPartOf" and value.strip():
            return value.strip()
    return None


def _page_id(record_id: str, shown: str, ordinal: int) -> str:
    """The article id: the ``WARC-Record-ID`` as the WARC writes it (``<urn:uuid:...>``, as FineWeb and datatrove
    keep it), or ``<file>#<ordinal>`` without one."""
    return record_id.strip() or f"{shown}#{ordinal}"


def _truncation(cut_off: bool, got: int, expected: int) -> str | None:
    """Why a page's record is cut off (None: it is whole)."""
    if cut_off:
        return "the record is cut off inside its headers (a truncated WARC file)"
    if got < expected:
        return f"the record holds {got} of the {expected} payload bytes its headers give (a truncated record)"
    return None


def _break_reason(exc: BaseException) -> str:
    """Why the page read just before a record that does not parse is broken."""
    return (
        f"the next record does not start where this record's Content-Length says "
        f"({error_text(exc)}); its length or the next header is wrong"
    )


def _record_starts_at(path: Location, offset: int, record_id: str) -> bool:
    """Whether the record ``record_id`` is read from ``offset`` (a small read: the record's first bytes)."""
    with store(path).open(block_size=SNIFF_BYTES) as stream:
        stream.seek(offset)
        try:
            first = next(iter(_iterate(stream)), None)
        except (OSError, ValueError):
            return False
    return first is not None and first.record_id == record_id


@dataclass(frozen=True)
class WarcCursor:
    """Where a read of a WARC stands between two pages: the next record's ordinal and offset (None: it is found by
    reading from the start, as in a file gzipped whole), the records met before it by kind, the crawl the last
    ``warcinfo`` named, and whether records can be read from their offsets (None: no page has told yet)."""

    ordinal: int = 0
    offset: int | None = 0
    kinds: tuple[tuple[str, int], ...] = ()
    dump: str | None = None
    offsets: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ordinal": self.ordinal, "offset": self.offset, "kinds": dict(self.kinds), "dump": self.dump,
                "offsets": self.offsets}  # fmt: skip

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> WarcCursor:
        kinds = tuple((str(k), int(v)) for k, v in value["kinds"].items())
        offset = None if value["offset"] is None else int(value["offset"])
        return cls(int(value["ordinal"]), offset, kinds, value["dump"], value["offsets"])


@dataclass(frozen=True)
class StreamedPage:
    """A page met by :class:`WarcStream`: its id, URL, transport charset and record, its decoded payload or why it
    cannot be read, and the cursor just after it (where a read taken up again starts)."""

    id: str
    url: str | None
    charset: str | None
    ref: WarcRecordRef
    payload: bytes | BaseException
    after: WarcCursor


class WarcStream:
    """The pages of one WARC file read in one pass, as a stream, each with its payload. Iterate once; then
    :attr:`kinds` counts every record met (from the start, also before ``start``).

    A page is given once the record after it has been read (that record may show it broken). Taken up at
    ``start`` (a page's :attr:`StreamedPage.after`), it goes on with the pages after that one: the file is read
    from the cursor's offset, or from the start without taking the records before it again.
    """

    def __init__(self, path: Location, shown: str, max_bytes: int, start: WarcCursor | None = None) -> None:
        self.path = path
        self.shown = shown
        self.max_bytes = max_bytes
        self.start = start or WarcCursor()
        self.kinds = dict.fromkeys(RECORD_KINDS, 0) | dict(self.start.kinds)
        self.size = 0
        self.position = 0  # the stream's position at the last record: how far the read has come

    def __iter__(self) -> Iterator[StreamedPage]:
        check_is_warc(self.path, self.shown)
        self.size = store(self.path).size()
        start = self.start
        dump, offsets = start.dump, start.offsets
        kinds = self.kinds
        pending: StreamedPage | None = None  # its cursor set when it is given
        skip = start.ordinal if start.offset is None else 0  # records read again, not taken again
        ordinal = -1 if start.offset is None else start.ordinal - 1

        def cursor(next_offset: int | None) -> WarcCursor:  # before the record after ``ordinal``
            usable = next_offset if offsets is not False else None
            return WarcCursor(ordinal + 1, usable, tuple((k, v) for k, v in kinds.items() if v), dump, offsets)

        with store(self.path).open() as stream:
            if start.offset:
                stream.seek(start.offset)
            for record in _records(stream):
                if isinstance(record, _Break):
                    after = cursor(None)  # a read taken up there meets the break again
                    kinds["broken"] += 1
                    if pending is not None and pending.ref.broken is None:
                        reason = _break_reason(record.error)
                        pending = replace(pending, ref=replace(pending.ref, broken=reason), payload=EOFError(reason))
                    if pending is not None:
                        yield replace(pending, after=after)
                        pending = None
                    break
                self.position = record.stream_pos
                if skip:
                    skip -= 1
                    ordinal += 1
                    continue
                if pending is not None:
                    yield replace(pending, after=cursor(record.stream_pos))
                    pending = None
                ordinal += 1
                url = record.headers.get("WARC-Target-URI")
                cut_off = record.headers.get("Content-Length") is None
                kind = "broken" if cut_off else _kind(record)
                kinds[kind] += 1
                if kind == "warcinfo":
                    dump = _is_part_of(record)
                if kind != "html" and not (cut_off and url is not None):
                    continue
                pending, offsets = self._page(record, url, cut_off, ordinal, offsets, dump)
            if pending is not None:
                yield replace(pending, after=cursor(self.size))
        self.position = self.size

    def _page(
        self, record: Any, url: str | None, cut_off: bool, ordinal: int, offsets: bool | None, dump: str | None
    ) -> tuple[StreamedPage, bool | None]:
        """The page of an HTML (or cut-off) record, its payload read (or why it cannot be), its cursor ``start``;
        and whether the records' offsets are where they start in the file (``offsets``; found out at the first
        whole record after the first)."""
        expected = record.content_length
        try:
            stored = bytes(record.reader.read(self.max_bytes + 1))
            got = len(stored) + _payload_length(record)
        except SelectionError:
            raise
        except (OSError, ValueError) as exc:
            stored, got = b"", -1
            failure: BaseException | None = EOFError(f"the record's payload cannot be read ({error_text(exc)})")
        else:
            failure = None
        broken = _truncation(cut_off, got, expected) if got >= 0 else None
        if offsets is None and record.stream_pos and broken is None:
            offsets = _record_starts_at(self.path, record.stream_pos, record.record_id or "")
        date = record.headers.get("WARC-Date")
        offset = record.stream_pos if offsets is not False else None
        ref = WarcRecordRef(ordinal, offset, record.record_id or "", date, expected, broken, dump)
        page_id, charset = _page_id(ref.record_id, self.shown, ordinal), charset_label(record.http_charset)
        payload = failure or self._payload(record, stored, broken)
        return StreamedPage(page_id, url, charset, ref, payload, self.start), offsets

    def _payload(self, record: Any, stored: bytes, broken: str | None) -> bytes | BaseException:
        if broken is not None:
            return EOFError(broken)
        if len(stored) > self.max_bytes:
            return PageTooLargeError.over(self.max_bytes)
        headers = record.http_headers
        try:
            return decoded_payload(
                stored, headers.get("Transfer-Encoding"), headers.get("Content-Encoding"), self.max_bytes
            )
        except (EOFError, PageTooLargeError) as exc:
            return exc
