"""Decoding page bytes into the one string every extractor receives (selection_extraction.decode)."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selection_extraction.decode import PRESCAN_BYTES, DecodeSource, declared_charset, decode_html, web_codecs

CAFE = "<p>café “quoted” – naïve</p>"


def meta(label: str) -> str:
    return f'<html><head><meta charset="{label}"></head><body>'


CASES = [
    pytest.param(codecs.BOM_UTF8 + CAFE.encode(), None, CAFE, "utf-8", DecodeSource.BOM, id="bom-utf-8"),
    pytest.param(
        codecs.BOM_UTF16_LE + CAFE.encode("utf-16-le"), None, CAFE, "utf-16-le", DecodeSource.BOM, id="bom-utf-16le"
    ),
    pytest.param(
        codecs.BOM_UTF16_BE + CAFE.encode("utf-16-be"), None, CAFE, "utf-16-be", DecodeSource.BOM, id="bom-utf-16be"
    ),
    pytest.param(
        codecs.BOM_UTF8 + (meta("windows-1252") + CAFE).encode(),
        None,
        meta("windows-1252") + CAFE,
        "utf-8",
        DecodeSource.BOM,
        id="bom-beats-declaration",
    ),
    pytest.param(
        (meta("windows-1252") + CAFE).encode("cp1252"),
        None,
        meta("windows-1252") + CAFE,
        "cp1252",
        DecodeSource.DECLARED,
        id="declared-windows-1252",
    ),
    pytest.param(
        (meta("ISO-8859-1") + CAFE).encode("cp1252"),
        None,
        meta("ISO-8859-1") + CAFE,
        "cp1252",
        DecodeSource.DECLARED,
        id="latin-1-label-means-windows-1252",
    ),
    pytest.param(
        meta("iso-8859-1").encode() + b"<p>\x81\xe9</p>",
        None,
        meta("iso-8859-1") + "<p>\x81é</p>",
        "iso8859-1",
        DecodeSource.DECLARED,
        id="latin-1-bytes-windows-1252-leaves-undefined",
    ),
    pytest.param(
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r">'
        + "<p>привет</p>".encode("koi8-r"),
        None,
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>привет</p>',
        "koi8-r",
        DecodeSource.DECLARED,
        id="http-equiv-koi8-r",
    ),
    pytest.param(
        b'<?xml version="1.0" encoding="Shift_JIS"?><p>' + "日本語".encode("shift_jis") + b"</p>",
        None,
        '<?xml version="1.0" encoding="Shift_JIS"?><p>日本語</p>',
        "cp932",
        DecodeSource.DECLARED,
        id="xml-declaration",
    ),
    pytest.param(
        (meta("gb2312") + "<p>中文</p>").encode("gb18030"),
        None,
        meta("gb2312") + "<p>中文</p>",
        "gb18030",
        DecodeSource.DECLARED,
        id="gb2312-label-decodes-as-gb18030",
    ),
    pytest.param(
        (meta("iso-8859-1") + CAFE).encode("utf-8"),
        None,
        meta("iso-8859-1") + CAFE,
        "utf-8",
        DecodeSource.VALID_UTF8,
        id="wrong-legacy-declaration-on-utf-8-bytes",
    ),
    pytest.param(
        (meta("utf-8") + CAFE).encode("cp1252"),
        None,
        meta("utf-8") + CAFE.encode("cp1252").decode("utf-8", errors="replace"),
        "utf-8",
        DecodeSource.REPLACED,
        id="wrong-utf-8-declaration-on-windows-1252-bytes",
    ),
    pytest.param(
        (meta("x-no-such-charset") + CAFE).encode(),
        None,
        meta("x-no-such-charset") + CAFE,
        "utf-8",
        DecodeSource.VALID_UTF8,
        id="unknown-label",
    ),
    pytest.param(
        (meta("utf-7") + "<p>+ADw-script+AD4-</p>").encode(),
        None,
        meta("utf-7") + "<p>+ADw-script+AD4-</p>",
        "utf-8",
        DecodeSource.VALID_UTF8,
        id="utf-7-refused",
    ),
    pytest.param(
        (meta("utf-16") + CAFE).encode(),
        None,
        meta("utf-16") + CAFE,
        "utf-8",
        DecodeSource.DECLARED,
        id="utf-16-in-meta-means-utf-8",
    ),
    pytest.param(
        (meta("utf-8") + "<p>привет</p>").encode("cp1251"),
        "windows-1251",
        meta("utf-8") + "<p>привет</p>",
        "cp1251",
        DecodeSource.TRANSPORT,
        id="transport-charset-first",
    ),
    pytest.param(
        (meta("windows-1251") + "<p>привет</p>").encode("cp1251"),
        "utf-8",
        meta("windows-1251") + "<p>привет</p>",
        "cp1251",
        DecodeSource.DECLARED,
        id="invalid-transport-charset-falls-to-declaration",
    ),
    pytest.param(CAFE.encode(), None, CAFE, "utf-8", DecodeSource.VALID_UTF8, id="no-declaration-utf-8"),
    pytest.param(b"", None, "", "utf-8", DecodeSource.VALID_UTF8, id="empty"),
    pytest.param(
        b"<p>\xff\xfe\xfd</p>", None, "<p>\ufffd\ufffd\ufffd</p>", "utf-8", DecodeSource.REPLACED, id="junk-bytes"
    ),
]


@pytest.mark.parametrize(("data", "transport", "html", "encoding", "source"), CASES)
def test_decoding_follows_the_order_of_evidence(
    data: bytes, transport: str | None, html: str, encoding: str, source: DecodeSource
) -> None:
    decoded = decode_html(data, transport)
    assert (decoded.html, decoded.encoding, decoded.source) == (html, encoding, source)


def test_declaration_beyond_the_prescan_window_is_not_read() -> None:
    page = b"<html><head>" + b" " * PRESCAN_BYTES + b'<meta charset="koi8-r">'
    assert declared_charset(page) is None
    assert declared_charset(page[: PRESCAN_BYTES // 2] + b'<meta charset="koi8-r">') == "koi8-r"


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        pytest.param("UTF-8", ("utf-8",), id="utf-8"),
        pytest.param("latin1", ("cp1252", "iso8859-1"), id="latin1"),
        pytest.param("us-ascii", ("cp1252", "ascii"), id="ascii"),
        pytest.param("base64", (), id="not-a-text-encoding"),
        pytest.param("unicode_escape", (), id="escape-codec"),
        pytest.param("", (), id="empty"),
    ],
)
def test_web_codecs(label: str, expected: tuple[str, ...]) -> None:
    assert web_codecs(label) == expected


@given(st.binary(max_size=2000), st.one_of(st.none(), st.sampled_from(["utf-8", "latin1", "koi8-r", "bogus"])))
def test_any_bytes_decode_deterministically(data: bytes, transport: str | None) -> None:
    first = decode_html(data, transport)
    assert isinstance(first.html, str)
    assert decode_html(data, transport) == first


@given(st.text(max_size=500))
def test_undeclared_utf_8_round_trips(text: str) -> None:
    data = text.encode("utf-8")
    if data.startswith(codecs.BOM_UTF8) or declared_charset(data) is not None:
        return
    assert decode_html(data).html == text
