"""The three extractors, called the way their users call them, with nothing fetched.

Each adapter is a module-level function ``(html, url) -> (text, title)`` that
the extraction workers run (see :mod:`selection_extraction.pool`):

* ``trafilatura``: ``trafilatura.extract(html, include_comments=False)``; no
  title (the title is part of trafilatura's metadata step, which also runs date
  detection: a second pass over every page for a field the selection never reads).
* ``newspaper4k``: ``newspaper.article(url, input_html=html, config=...)`` with
  ``fetch_images=False`` (otherwise ``parse()`` downloads images) and
  ``memorize_articles=False``; the title is ``Article.title``.
* ``readability``: ``Document(html).summary(html_partial=True)`` (the article as
  HTML), turned into plain text with paragraph breaks kept by
  ``html_text.extract_text``; the title is ``Document.title()``.

This module imports the libraries at its top (quietly: newspaper4k warns about
optional NLP packages at import), so that the workers' fork server imports
them once. Import it only where extraction runs.

:func:`prepare_worker` runs once in every worker: newspaper4k asks ``tldextract``
for domain names, and ``tldextract``, by default, downloads the public suffix
list on first use and caches it in the home directory. The worker replaces
that default with the snapshot bundled in ``tldextract`` (no network, no disk,
and the same list on every machine, so the same results).
"""

from __future__ import annotations

import warnings

# The options live beside the descriptions of the calls that each batch records, below
# both this module and the engine (which names this module but never imports it).
from selection_extraction.options import NEWSPAPER_CONFIG, READABILITY_SUMMARY_OPTIONS, TRAFILATURA_OPTIONS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import html_text
    import newspaper
    import tldextract.tldextract as _tldextract
    import trafilatura
    from readability import Document


def prepare_worker() -> None:
    """Make ``tldextract`` (used by newspaper4k) offline: bundled public suffix list, no cache."""
    _tldextract.TLD_EXTRACTOR = _tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


def extract_trafilatura(html: str, url: str | None) -> tuple[str, str | None]:
    """trafilatura's plain text of the main content (comments excluded)."""
    return trafilatura.extract(html, **TRAFILATURA_OPTIONS) or "", None


def _newspaper_config() -> newspaper.Config:
    config = newspaper.Config()
    for name, value in NEWSPAPER_CONFIG.items():
        setattr(config, name, value)
    return config


def extract_newspaper4k(html: str, url: str | None) -> tuple[str, str | None]:
    """newspaper4k's article text and title, parsed from the given HTML (no download)."""
    article = newspaper.article(url or "", input_html=html, config=_newspaper_config())
    return article.text or "", article.title or None


def extract_readability(html: str, url: str | None) -> tuple[str, str | None]:
    """readability-lxml's article, as plain text with paragraph breaks, and the page title."""
    document = Document(html)
    article_html = document.summary(**READABILITY_SUMMARY_OPTIONS)
    text = html_text.extract_text(article_html) if article_html else ""
    try:
        title = document.title()
    except Exception:  # noqa: BLE001 - the title is informational; the text is what counts
        title = None
    return text, title
