"""What a token is, and where ftfy's mojibake heuristic can match: shared by ``normalize.py`` and ``kernel.py``."""

from __future__ import annotations

import re
from typing import Final

import ftfy.badness
import regex

#: Step 8 of the rule: a token is a maximal run of letters and digits.
TOKEN: Final[regex.Pattern[str]] = regex.compile(r"[\p{L}\p{N}]+")


def find_mojibake_markers() -> tuple[re.Pattern[str] | None, int]:
    """Analyse ftfy's BADNESS_RE: (pattern matching any marker char, max match width).

    ``(None, 0)`` unless every top-level alternative has a mandatory item of only non-ASCII characters,
    and the pattern has no look-around, back-reference or end anchor, and bounded matches.
    """
    try:
        import re._constants as C  # type: ignore[import-not-found]
        import re._parser as P  # type: ignore[import-not-found]

        bad = ftfy.badness.BADNESS_RE
        parsed = P.parse(bad.pattern, bad.flags)
        width = parsed.getwidth()[1]
        if width > 64:
            return None, 0
        allowed_at = {C.AT_BEGINNING, C.AT_BEGINNING_STRING}

        def forbidden(items: object) -> bool:
            for op, av in items:  # type: ignore[attr-defined]
                if op in (C.ASSERT, C.ASSERT_NOT, C.GROUPREF, C.GROUPREF_EXISTS):
                    return True
                if op is C.AT and av not in allowed_at:
                    return True
                if op is C.BRANCH and any(forbidden(b) for b in av[1]):
                    return True
                if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT) and forbidden(av[2]):
                    return True
                if op is C.SUBPATTERN and forbidden(av[-1]):
                    return True
            return False

        if forbidden(parsed):
            return None, 0

        def members(op: object, av: object) -> set[str] | None:
            if op is C.LITERAL:
                return {chr(av)}  # type: ignore[arg-type]
            if op is C.IN:
                out: set[str] = set()
                for o, a in av:  # type: ignore[attr-defined]
                    if o is C.LITERAL:
                        out.add(chr(a))
                    elif o is C.RANGE:
                        out.update(chr(c) for c in range(a[0], a[1] + 1))
                    else:  # NEGATE, CATEGORY: not a closed set
                        return None
                return out
            return None

        top = list(parsed)
        branches = top[0][1][1] if len(top) == 1 and top[0][0] is C.BRANCH else [top]
        frequent = set("\u2019\u2018\u201c\u201d\u2013\u2014\u2026\u00a0\u00e9\u00b7\u00ab\u00bb")
        markers: set[str] = set()
        for branch in branches:
            options = [m for op, av in branch if (m := members(op, av)) and all(ord(c) > 127 for c in m)]
            if not options:
                return None, 0
            markers |= min(options, key=lambda m: (len(m & frequent), len(m), sorted(m)))
        cls = "".join(re.escape(c) for c in sorted(markers))
        return re.compile(f"[{cls}]"), width
    except Exception:  # any surprise: no shortcut, ftfy runs every time
        return None, 0


#: Every match of ``ftfy.badness.BADNESS_RE`` holds a marker character and is at most ``MOJIBAKE_MAX_WIDTH``
#: long (``None`` and 0: the shortcut is off).
MOJIBAKE_MARKERS, MOJIBAKE_MAX_WIDTH = find_mojibake_markers()
