"""Turn the bytes of a web page into the one ``str`` that every extractor receives (pure functions, no I/O)."""

from __future__ import annotations

import codecs
import enum
import re
from dataclasses import dataclass
from typing import Final

#: How far into the page a charset declaration is looked for.
PRESCAN_BYTES: Final[int] = 8192

#: Encodings never accepted from a page (not web text encodings, or able to smuggle markup, like UTF-7).
_REFUSED_CODECS: Final[frozenset[str]] = frozenset(
    {"utf-7", "unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined", "mbcs", "oem"}
)

#: Codec name -> the superset the Encoding Standard decodes it with.
_WEB_SUPERSET: Final[dict[str, str]] = {
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "shift_jis": "cp932",
    "big5": "big5hkscs",
}

_BOMS: Final[tuple[tuple[bytes, str], ...]] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_LABEL = rb"([A-Za-z0-9][A-Za-z0-9_.:\-]*)"
_XML_DECL = re.compile(rb"\A\s*<\?xml\b[^>]*?\bencoding\s*=\s*[\"']" + _LABEL, re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta\b[^>]*?\bcharset\s*=\s*[\"']?\s*" + _LABEL, re.IGNORECASE)


class DecodeSource(enum.StrEnum):
    """Which evidence decided the encoding."""

    BOM = "bom"
    TRANSPORT = "transport"
    DECLARED = "declared"
    VALID_UTF8 = "valid-utf-8"
    REPLACED = "utf-8-with-replacement"


@dataclass(frozen=True)
class DecodedHtml:
    """A page's text, its codec, and the evidence that decided."""

    html: str
    encoding: str
    source: DecodeSource


def declared_charset(data: bytes) -> str | None:
    """The charset label the page declares in its first :data:`PRESCAN_BYTES` bytes, or None."""
    head = data[:PRESCAN_BYTES]
    match = _XML_DECL.match(head) or _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else None


def web_codecs(label: str) -> tuple[str, ...]:
    """The codecs to try, in order, for a charset label; empty when the label is refused."""
    try:
        info = codecs.lookup(label.strip())
    except (LookupError, ValueError):
        return ()
    name = info.name
    if name in _REFUSED_CODECS or not _decodes_to_text(name):
        return ()
    if name.startswith(("utf-16", "utf-32")):
        # A declaration readable as ASCII cannot be in UTF-16/32 (Encoding Standard: use UTF-8).
        return ("utf-8",)
    superset = _WEB_SUPERSET.get(name)
    return (superset, name) if superset else (name,)


def _decodes_to_text(codec: str) -> bool:
    """Whether ``codec`` turns bytes into ``str`` (not a bytes-to-bytes codec such as base64 or zlib, nor a
    str-to-str one such as rot13)."""
    try:
        return isinstance(codecs.decode(b"", codec), str)
    except Exception:  # zlib, bz2...: their errors have no common class; any is "not a text codec"
        return False


def _strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _claimed(data: bytes, label: str, source: DecodeSource) -> DecodedHtml | None:
    """Decode by a claimed charset if the bytes decode under it without an error (valid UTF-8 wins over legacy)."""
    for codec in web_codecs(label):
        text = _strict(data, codec)
        if text is None:
            continue
        if codec != "utf-8" and not data.isascii():
            as_utf8 = _strict(data, "utf-8")
            if as_utf8 is not None:
                return DecodedHtml(as_utf8, "utf-8", DecodeSource.VALID_UTF8)
        return DecodedHtml(text, codec, source)
    return None


def decode_html(data: bytes, transport_charset: str | None = None) -> DecodedHtml:
    """Decode a page's bytes by the order of evidence of ``docs/extraction.md``, given the charset of its HTTP
    ``Content-Type`` if known; never raises."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return DecodedHtml(data[len(bom) :].decode(codec, errors="replace"), codec, DecodeSource.BOM)
    transport = (transport_charset or "").strip() or None
    declared = declared_charset(data)
    for claim, source in ((transport, DecodeSource.TRANSPORT), (declared, DecodeSource.DECLARED)):
        decoded = None if claim is None else _claimed(data, claim, source)
        if decoded is not None:
            return decoded
    text = _strict(data, "utf-8")
    if text is not None:
        return DecodedHtml(text, "utf-8", DecodeSource.VALID_UTF8)
    return DecodedHtml(data.decode("utf-8", errors="replace"), "utf-8", DecodeSource.REPLACED)
