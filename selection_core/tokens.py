"""What a token is, and where ftfy's mojibake heuristic can match: shared by ``normalize.py`` and ``kernel.py``."""

from __future__ import annotations

import re
from typing import Final

import ftfy.badness
import regex

#: Step 8 of the rule: a token is a maximal run of letters and digits.
TOKEN: Final[regex.Pattern[str]] = regex.compile(r"[\p{L}\p{N}]+")


#: A character an item of a pattern matches, one of a set not closed (``\s``, ``\w``, ``.``, ``[^...]``): ``None``.
_Item = frozenset[str] | None

_OPEN_ESCAPES: Final[frozenset[str]] = frozenset("sSwWdD")
_HEX_ESCAPES: Final[dict[str, int]] = {"x": 2, "u": 4, "U": 8}


class _Unsupported(Exception):
    """The pattern holds more than alternatives of single characters and classes: no shortcut."""


def _escape(pattern: str, at: int) -> tuple[str | None, int]:
    """The character escaped at ``pattern[at]`` (after its backslash), ``None`` for an open class; and where the
    pattern goes on."""
    char = pattern[at]
    if char in _OPEN_ESCAPES:
        return None, at + 1
    if char in _HEX_ESCAPES:
        digits = pattern[at + 1 : at + 1 + _HEX_ESCAPES[char]]
        return chr(int(digits, 16)), at + 1 + len(digits)
    if char.isalnum():  # an anchor (\b, \A, \Z), a back-reference, a named character: not analysed
        raise _Unsupported(char)
    return char, at + 1


def _char_class(pattern: str, at: int) -> tuple[_Item, int]:
    """The set of characters of the class opening at ``pattern[at]`` (after its ``[``); where the pattern goes on."""
    negated = pattern[at] == "^"
    at += negated
    members: set[str] | None = None if negated else set()
    first = at
    while pattern[at] != "]" or at == first:  # a "]" first is one of the members
        char, at = _escape(pattern, at + 1) if pattern[at] == "\\" else (pattern[at], at + 1)
        if char is None:
            members = None
        elif pattern[at] == "-" and pattern[at + 1] != "]":
            end, at = _escape(pattern, at + 2) if pattern[at + 1] == "\\" else (pattern[at + 1], at + 2)
            if end is None:
                raise _Unsupported("a range to an open class")
            if members is not None:
                members.update(chr(c) for c in range(ord(char), ord(end) + 1))
        elif members is not None:
            members.add(char)
    return (None if members is None else frozenset(members)), at + 1


def _alternatives(pattern: str, verbose: bool) -> list[list[tuple[_Item, bool]]]:
    """The top-level alternatives of ``pattern``, each the list of what its characters match in turn, and whether
    that character is required (``?`` after it: not).

    Raises :class:`_Unsupported` for anything else: a group, a repeat, an anchor (but ``^`` first), a look-around.
    """
    branches: list[list[tuple[_Item, bool]]] = [[]]
    at = 0
    while at < len(pattern):
        char = pattern[at]
        item: _Item = None
        if verbose and char.isspace():
            at += 1
            continue
        if verbose and char == "#":
            newline = pattern.find("\n", at)
            at = len(pattern) if newline < 0 else newline + 1
            continue
        if char == "|":
            branches.append([])
        elif char == "^" and not branches[-1]:
            pass  # at the beginning: the rest still has to match
        elif char == "?" and branches[-1] and branches[-1][-1][1]:
            branches[-1][-1] = (branches[-1][-1][0], False)
        elif char in "()*+?{}^$":
            raise _Unsupported(char)
        else:
            if char == "[":
                item, at = _char_class(pattern, at + 1)
            elif char == "\\":
                escaped, at = _escape(pattern, at + 1)
                item = None if escaped is None else frozenset(escaped)
            else:  # "." matches any character: an open class
                item, at = (None if char == "." else frozenset(char)), at + 1
            branches[-1].append((item, True))
            continue
        at += 1
    return branches


def find_mojibake_markers() -> tuple[re.Pattern[str] | None, int]:
    """Analyse ftfy's BADNESS_RE: (pattern matching any marker char, max match width).

    Read as alternatives of single characters and character classes, each alternative must have an item of only
    non-ASCII characters (its markers). ``(None, 0)`` when the pattern is anything else (a group, a repeat, an
    anchor, a look-around, a flag that changes what a class matches) or a match may be over 64 characters long.
    """
    bad = ftfy.badness.BADNESS_RE
    if bad.flags & (re.IGNORECASE | re.LOCALE):
        return None, 0
    try:
        branches = _alternatives(bad.pattern, verbose=bool(bad.flags & re.VERBOSE))
    except (_Unsupported, IndexError, ValueError):  # IndexError: cut short; ValueError: a bad hex escape
        return None, 0
    width = max(len(branch) for branch in branches)
    if width > 64 or not all(any(required for _, required in branch) for branch in branches):
        return None, 0
    frequent = set("\u2019\u2018\u201c\u201d\u2013\u2014\u2026\u00a0\u00e9\u00b7\u00ab\u00bb")
    markers: set[str] = set()
    for branch in branches:
        options = [m for m, required in branch if required and m and all(ord(c) > 127 for c in m)]
        if not options:
            return None, 0
        markers |= min(options, key=lambda m: (len(m & frequent), len(m), sorted(m)))
    cls = "".join(re.escape(c) for c in sorted(markers))
    return re.compile(f"[{cls}]"), width


#: Every match of ``ftfy.badness.BADNESS_RE`` holds a marker character and is at most ``MOJIBAKE_MAX_WIDTH``
#: long (``None`` and 0: the shortcut is off).
MOJIBAKE_MARKERS, MOJIBAKE_MAX_WIDTH = find_mojibake_markers()
