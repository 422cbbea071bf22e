"""``selection_core.tokens``: the mojibake markers derived from the installed ftfy."""

from __future__ import annotations

import re

import ftfy.badness
import pytest
from hypothesis import given
from hypothesis import strategies as st

from selection_core import tokens
from selection_core.tokens import MOJIBAKE_MARKERS, MOJIBAKE_MAX_WIDTH


def test_mojibake_shortcut_is_on_for_the_installed_ftfy() -> None:
    # If this fails after an ftfy upgrade, the shortcut switched itself off
    # (results stay correct, only slower): review find_mojibake_markers.
    assert MOJIBAKE_MARKERS is not None


def test_the_reading_of_a_pattern_keeps_classes_ranges_escapes_and_optional_items() -> None:
    pattern = "\n  # a comment | (not read)\n  ^[a-c\\]] \\xe9? [^x]\n  |\n  \\s . [ -]\n"
    assert tokens._alternatives(pattern, verbose=True) == [
        [(frozenset("abc]"), True), (frozenset("\u00e9"), False), (None, True)],
        [(None, True), (None, True), (frozenset(" -"), True)],
    ]


@pytest.mark.parametrize("pattern", ["(ab)", "a*", "a+", "a{2}", "a$", "\\bx", "(?=a)", "a??"])
def test_a_pattern_beyond_single_characters_is_not_read(pattern: str) -> None:
    with pytest.raises(tokens._Unsupported):
        tokens._alternatives(pattern, verbose=False)


#: Every character ftfy's pattern names, and a few it does not: where its matches are.
_ALPHABET = sorted(set(ftfy.badness.BADNESS_RE.pattern) | set("ab Z.\n\u00e9\u0416"))


@given(st.text(alphabet=_ALPHABET, max_size=40))
def test_every_match_of_ftfys_pattern_holds_a_marker_and_is_at_most_the_width_long(text: str) -> None:
    assert MOJIBAKE_MARKERS is not None
    for match in ftfy.badness.BADNESS_RE.finditer(text):
        assert MOJIBAKE_MARKERS.search(match.group()), match
        assert len(match.group()) <= MOJIBAKE_MAX_WIDTH


def test_the_markers_find_the_usual_mojibake() -> None:
    assert MOJIBAKE_MARKERS is not None and MOJIBAKE_MARKERS.search("caf\u00c3\u00a9")
    assert isinstance(MOJIBAKE_MARKERS, re.Pattern)
