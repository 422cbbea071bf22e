"""Regression cases for the fast paths of normalization and shingling.

Each fast path must give exactly what the plain definition gives:
``text_shingles(text) == (len(t), shingles(t))`` with ``t = tokenize(text)``.
"""

from __future__ import annotations

import html
import importlib
import unicodedata

import ftfy
import ftfy.badness
import pytest

import selection_core as sc
from selection_core.shingles import LineCache, text_shingles

normalize_module = importlib.import_module("selection_core.normalize")

LINE_CASES = [
    pytest.param("one two three\nfour five six", id="window-across-a-break"),
    pytest.param("a\nb\nc\nd\ne\nf", id="one-token-lines"),
    pytest.param("a b\n\n\nc d e f g h", id="blank-lines"),
    pytest.param("a b c d\ne f g h i j", id="four-then-six"),
    pytest.param("x\n \n\t\ny", id="whitespace-lines"),
    pytest.param("", id="empty"),
    pytest.param("one two", id="short"),
    pytest.param("Ã©t\u00e9 caf\u00c3\u00a9\nnext line here now please", id="mojibake-with-break"),
]


@pytest.mark.parametrize("text", LINE_CASES)
def test_text_shingles_equals_the_definition(text: str) -> None:
    tokens = sc.tokenize(text)
    assert text_shingles(text) == (len(tokens), sc.shingles(tokens))
    assert text_shingles(text, LineCache()) == (len(tokens), sc.shingles(tokens))


def test_shared_cache_gives_each_text_its_own_set() -> None:
    """Found by the property tests: a per-article memo keyed by object identity
    returned another text's set once a temporary set had been freed. Texts with
    short first lines build uncached crossing windows; no consensus exists here."""
    article = {
        "trafilatura": {"text": "café café</b> alpha\xa0Beta&nbsp;δέλτα\n"},
        "newspaper4k": {"text": "42 cafÃ©\nalpha</b> Beta](u) δέλτα\n"},
        "readability": {"cleaned_text": "GAMMA</b> alpha <b>Beta![i](u)cafÃ©\nalpha GAMMA&nbsp;42&amp; "},
    }
    cache = LineCache()
    for name, field in (("trafilatura", "text"), ("newspaper4k", "text"), ("readability", "cleaned_text")):
        text = article[name][field]
        tokens = sc.tokenize(text)
        assert text_shingles(text, cache) == (len(tokens), sc.shingles(tokens))
    sel = sc.select_article(article)
    assert sel.consensus_size == 0
    assert sel.reason is sc.Reason.NO_CONSENSUS_MEDIAN


def test_mojibake_shortcut_is_on_for_the_installed_ftfy() -> None:
    # If this fails after an ftfy upgrade, the shortcut switched itself off
    # (results stay correct, only slower): review _mojibake_markers.
    assert normalize_module._MARKERS is not None


@pytest.mark.parametrize(
    "text",
    [
        "cafÃ©",
        "The Mona Lisa doesnâ€™t have eyebrows.",
        "Ã ",
        "aÃ bc",
        "вЂ™",
        "Ø¹Ø±Ø¨ÙŠ",
        "Â£100",
        "test Â» more",
        "plain café with é and “quotes” — dash",
        "line one Ã\nline two",
    ],
)
def test_mojibake_shortcut_never_skips_what_ftfy_would_fix(text: str) -> None:
    if ftfy.badness.is_bad(text):
        assert normalize_module._maybe_mojibake(text)
    # No markup in these texts: the plain pipeline is unescape, ftfy, NFKC, lower.
    assert sc.normalize(text) == unicodedata.normalize("NFKC", ftfy.fix_encoding(html.unescape(text))).lower()


def test_no_normalization_or_case_mapping_crosses_a_line_break() -> None:
    """The per-line processing is exact only if NFKC and lower() never act across
    a newline: checked for every code point, on both sides of the break."""
    import sys

    crossing = []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        n = unicodedata.normalize("NFKC", c)
        if (
            unicodedata.normalize("NFKC", "\n" + c) != "\n" + n
            or unicodedata.normalize("NFKC", c + "\n") != n + "\n"
            or ("a" + c + "\n" + c + "a").lower() != ("a" + c).lower() + "\n" + (c + "a").lower()
            or (c != "\n" and "\n" in n)
        ):
            crossing.append(cp)
    assert crossing == []
