"""The three extractors as ``(html, url) -> (text, title)`` functions; the only module importing their libraries."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any, Final

from selection_extraction.extractors import NEWSPAPER_CONFIG, READABILITY_SUMMARY_OPTIONS, TRAFILATURA_OPTIONS

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import html_text
    import newspaper
    import tldextract.tldextract as _tldextract
    import trafilatura
    from newspaper import parsers as _np_parsers
    from newspaper.cleaners import DocumentCleaner
    from newspaper.extractors.articlebody_extractor import ArticleBodyExtractor
    from newspaper.outputformatters import OutputFormatter
    from newspaper.utils import get_available_languages
    from readability import Document
    from readability.htmls import get_title as _readability_title


def prepare_worker() -> None:
    """Make ``tldextract`` (used by newspaper4k) offline: bundled public suffix list, no cache."""
    _tldextract.TLD_EXTRACTOR = _tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


def extract_trafilatura(html: str, url: str | None) -> tuple[str, str | None]:
    """trafilatura's plain text of the main content (comments excluded)."""
    return trafilatura.extract(html, **TRAFILATURA_OPTIONS) or "", None


def _dedupes_through_set(method: Callable[..., Any], marker: str) -> bool:
    """Whether the installed ``method`` still holds ``marker`` (its ``set(...)`` dedupe); True without a source."""
    try:
        return marker in inspect.getsource(method)
    except (OSError, TypeError):  # no source shipped: keep the fix, which is harmless on an ordered result
        return True


#: The body extractor's methods that dedupe through ``set``, with the source text that shows it.
TIE_FIXES: Final[dict[str, str]] = {
    "nodes_to_check": "items = set(items)",
    "compute_gravity_scores": "set(parent_nodes)",
}

#: Which of :data:`TIE_FIXES` the installed newspaper4k needs (decided once, at import).
NEEDED_TIE_FIXES: Final[frozenset[str]] = frozenset(
    name for name, marker in TIE_FIXES.items() if _dedupes_through_set(getattr(ArticleBodyExtractor, name), marker)
)


class TieOrderBodyExtractor(ArticleBodyExtractor):
    """newspaper4k's body extractor with its two ``set`` dedupes put back in an order the document decides:
    the candidate ``div`` s in document order, the scored parents in the order of their first occurrence."""

    def nodes_to_check(self, doc: Any) -> list[Any]:
        nodes = super().nodes_to_check(doc)
        if "nodes_to_check" not in NEEDED_TIE_FIXES:
            return nodes
        position = {element: i for i, element in enumerate(doc.iter("div"))}
        divs = sorted((node for node in nodes if node.tag == "div"), key=position.__getitem__)
        return [node for node in nodes if node.tag != "div"] + divs

    def compute_gravity_scores(self, nodes_with_text: list[Any]) -> list[Any]:
        scored = super().compute_gravity_scores(nodes_with_text)
        if "compute_gravity_scores" not in NEEDED_TIE_FIXES:
            return scored
        # The library appends each node's parent, then its grandparent, in this order.
        first: dict[Any, int] = {}
        for node in nodes_with_text:
            parent = node.getparent()
            for candidate in (parent, None if parent is None else parent.getparent()):
                if candidate is not None:
                    first.setdefault(candidate, len(first))
        # A candidate the library found and this loop did not is a KeyError: loud, not silently unordered.
        return sorted(scored, key=first.__getitem__)


def _newspaper_config() -> newspaper.Config:
    config = newspaper.Config()
    for name, value in NEWSPAPER_CONFIG.items():
        setattr(config, name, value)
    return config


def newspaper4k_article(html: str, url: str | None) -> newspaper.Article:
    """The unparsed ``Article`` of ``newspaper.article(url, input_html=html, config=...)``, with
    :class:`TieOrderBodyExtractor` (a fresh ``Config``: ``parse()`` sets the page's language on it)."""
    article = newspaper.Article(url or "", language=None, config=_newspaper_config())
    article.extractor.article_body_extractor = TieOrderBodyExtractor(article.config)
    article.download(input_html=html)
    return article


def parse_text_and_title(article: newspaper.Article) -> newspaper.Article:
    """``Article.parse()`` reduced to the steps that decide ``text`` and ``title``, in its order."""
    article.throw_if_not_downloaded_verbose()
    article.doc = _np_parsers.fromstring(article.html)
    if article.doc is None:
        article.is_parsed = True
        return article
    document_cleaner = DocumentCleaner(article.config)
    output_formatter = OutputFormatter(article.config)
    title = article.extractor.get_title(article.doc)
    article.title = title
    metadata = article.extractor.get_metadata(article.url, article.doc)
    if metadata["language"] in get_available_languages():
        article.meta_lang = metadata["language"]
        if article.config.use_meta_language:
            article.config.language = metadata["language"]
    article.top_node = article.extractor.calculate_best_node(article.doc)
    if article.top_node is not None:
        cleaned = document_cleaner.clean(article.extractor.top_node_complemented)
        article.text, article.article_html = output_formatter.get_formatted(cleaned, title)
    article.is_parsed = True
    return article


def extract_newspaper4k(html: str, url: str | None) -> tuple[str, str | None]:
    """newspaper4k's article text and title, parsed from the given HTML (no download), by the lean path."""
    article = parse_text_and_title(newspaper4k_article(html, url))
    return article.text or "", article.title or None


class FirstParseTitleDocument(Document):
    """readability's ``Document``, which keeps the title of its first parse (the one ``title()`` would parse again)."""

    first_title: str | None = None
    _title_read: bool = False

    def _html(self, force: bool = False) -> Any:
        tree = super()._html(force)
        if not self._title_read:
            self._title_read = True
            try:
                self.first_title = _readability_title(tree)
            except Exception:  # noqa: BLE001 - the title is informational; the text is what counts
                self.first_title = None
        return tree


def _readability_text(article_html: str | None) -> str:
    return html_text.extract_text(article_html) if article_html else ""


def extract_readability(html: str, url: str | None) -> tuple[str, str | None]:
    """readability-lxml's article, as plain text with paragraph breaks, and the page title (one parse of the page)."""
    document = FirstParseTitleDocument(html)
    text = _readability_text(document.summary(**READABILITY_SUMMARY_OPTIONS))
    return text, document.first_title
