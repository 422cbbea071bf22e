"""Markdown for artifacts: the one escaping rule, as text or as code, that both Prefect UIs show as it is.

A backslash before ASCII punctuation shows the character in both UIs; in a code span, where backslashes
are literal, only the table's ``|`` needs it (GFM splits rows before it reads code spans).
"""

from __future__ import annotations

import re
from typing import Final

# Inline syntax of Markdown, GFM or HTML; an "_" between two letters or digits never emphasizes (CommonMark).
_TEXT_SYNTAX: Final[re.Pattern[str]] = re.compile(r"([\\`*\[\]<>|&~!]|(?<![^\W_])_|_(?![^\W_]))")
_BACKTICKS: Final[re.Pattern[str]] = re.compile(r"`+")
_LINE_BREAK: Final[re.Pattern[str]] = re.compile(r"\r\n?|\n")


def _one_line(text: str) -> str:
    return _LINE_BREAK.sub(" ", text)


def md_cell(text: str) -> str:
    """``text`` for a Markdown table cell, heading or paragraph: on one line, shown as it is.

    >>> md_cell("a|b\\nc `d` <meta charset> & *e*")
    'a\\\\|b c \\\\`d\\\\` \\\\<meta charset\\\\> \\\\& \\\\*e\\\\*'
    """
    return _TEXT_SYNTAX.sub(r"\\\1", _one_line(text))


def md_code(text: str) -> str:
    """``text`` as an inline code span for a Markdown table cell: literal, on one line.

    >>> md_code("/data/a|b")
    '`/data/a\\\\|b`'
    >>> md_code("x `y`")
    '`` x `y` ``'
    >>> md_code("")
    ''
    """
    line = _one_line(text).replace("|", "\\|")
    if not line:
        return ""
    # One backtick longer than any run inside; a space pad when at an end (CommonMark strips one).
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(line)), default=0))
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"
