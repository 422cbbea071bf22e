"""``selection_core.normalize``: each fast path of normalization is the identity where it skips work.

The whole pipeline against a plain reference is in ``test_properties.py``.
"""

from __future__ import annotations

import html
import importlib
import unicodedata

import ftfy
import ftfy.badness
import pytest

import selection_core as sc
from selection_core.normalize import nfkc_form, prepare

normalize_module = importlib.import_module("selection_core.normalize")


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


def test_nfkc_form_is_steps_1_to_6() -> None:
    for text in ["Caf&eacute; ﬁne\nＷＩＤＴＨ\n\nok", "plain", "e\u0301\n\u0301x", "½ ① Ⅻ\r\nx²"]:
        assert nfkc_form(text) == unicodedata.normalize("NFKC", prepare(text))
