"""Text for the Markdown that explains a run (artifact summaries): one escaping rule for every cell."""

from __future__ import annotations


def md_cell(text: str) -> str:
    """Escape what would break a Markdown table cell (pipes, new lines, backticks).

    >>> md_cell("a|b\\nc `d`")
    "a\\\\|b c 'd'"
    """
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")
