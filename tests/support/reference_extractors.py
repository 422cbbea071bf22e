"""The libraries' own calls that the adapters of :mod:`selection_extraction.adapters` are checked and timed against."""

from __future__ import annotations

from selection_extraction.adapters import (
    Document,
    _newspaper_config,
    _readability_text,
    extract_trafilatura,
    newspaper,
    newspaper4k_article,
)
from selection_extraction.extractors import READABILITY_SUMMARY_OPTIONS

#: trafilatura has no lean path: its default call is the adapter's.
trafilatura_default = extract_trafilatura


def newspaper4k_full_parse(html: str, url: str | None) -> tuple[str, str | None]:
    """The reference of ``extract_newspaper4k``: the library's own full ``parse()``, with the same tie fix."""
    article = newspaper4k_article(html, url).parse()
    return article.text or "", article.title or None


def newspaper4k_default(html: str, url: str | None) -> tuple[str, str | None]:
    """The library's default call, without the fix: ``newspaper.article(url, input_html=html, config=...)``."""
    article = newspaper.article(url or "", input_html=html, config=_newspaper_config())
    return article.text or "", article.title or None


def readability_default(html: str, url: str | None) -> tuple[str, str | None]:
    """The reference of ``extract_readability``: ``summary()``, then ``title()`` (which parses the page again)."""
    document = Document(html)
    text = _readability_text(document.summary(**READABILITY_SUMMARY_OPTIONS))
    try:
        title = document.title()
    except Exception:  # noqa: BLE001 - the title is informational; the text is what counts
        title = None
    return text, title
