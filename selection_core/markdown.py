"""Text for the Markdown that explains a run (artifact summaries): the one escaping rule, as text or as code.

Prefect's two UIs read artifact Markdown differently, and both must show a value as it is:
the V1 UI (prefect-design's renderer over marked) and the V2 UI (react-markdown) both render raw
HTML, so a ``<meta charset>`` in a text disappears as a tag, and both read ``*``, ``_``, ``[`` and
backticks as formatting. A backslash before ASCII punctuation is CommonMark's own escape and
shows the character in both; inside a code span, where backslashes are literal, only the table's
``|`` needs it (GFM splits table rows before it reads code spans).
"""

from __future__ import annotations

import re
from typing import Final

# Punctuation Markdown, GFM or HTML can read as syntax inside a line (block syntax such as "#"
# or "1." only counts at the start of a line, and cells and headings never start with text).
# An "_" between two letters or digits never emphasizes (CommonMark), so "selection_core" stays as it is.
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

    The fence is one backtick longer than the longest run of backticks inside, padded with a
    space when the text starts or ends with one (CommonMark strips one space on each side).

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
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(line)), default=0))
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"
