"""``selection_core.tokens``: the mojibake markers derived from the installed ftfy."""

from __future__ import annotations

from selection_core.tokens import MOJIBAKE_MARKERS


def test_mojibake_shortcut_is_on_for_the_installed_ftfy() -> None:
    # If this fails after an ftfy upgrade, the shortcut switched itself off
    # (results stay correct, only slower): review find_mojibake_markers.
    assert MOJIBAKE_MARKERS is not None
