"""The three extractors, called so that they give their libraries' own texts, deterministically, with nothing fetched.

Each adapter is a module-level function ``(html, url) -> (text, title)`` that
the extraction workers run (see :mod:`selection_extraction.pool`):

* ``trafilatura``: ``trafilatura.extract(html, include_comments=False)``; no
  title (the title is part of trafilatura's metadata step, which also runs date
  detection: a second pass over every page for a field the selection never reads).
* ``newspaper4k``: the text and title of ``newspaper.article(url, input_html=html,
  config=...)`` (``fetch_images=False``, otherwise ``parse()`` downloads images;
  ``memorize_articles=False``), computed by the **lean path** :func:`parse_text_and_title`
  and with the body extractor's **ties in document order** (:class:`TieOrderBodyExtractor`).
* ``readability``: ``Document(html).summary(html_partial=True)`` (the article as
  HTML), turned into plain text with paragraph breaks kept by
  ``html_text.extract_text``; the title is ``Document.title()``, read from the
  document's first parse instead of a second one (:class:`FirstParseTitleDocument`).

**Why the lean paths give the same texts.** ``Article.parse()`` spends more than half
of its time on what this stage never reads: authors, the publication date, videos and
images. None of them changes the document the text comes from (the authors step works
on copies), so :func:`parse_text_and_title` runs only the steps that decide the text
and the title, in ``parse()``'s order: the parse, the title, the metadata (for the
language, which picks the stop words), the body extractor, the cleaner and the
formatter. readability's ``title()`` parses and cleans the whole page again, although
``summary()`` starts with exactly that parse; the title is taken from that first tree
before ``summary()`` changes it. The reference calls (:func:`newspaper4k_full_parse`,
:func:`readability_default`) are the libraries' own, and the tests check on every real
page that the lean paths give their texts, titles and exception types byte for byte.

**Why the tie fix.** newspaper4k 0.9.x dedupes its candidate nodes through ``set``
twice (``nodes_to_check`` for ``div`` s, ``compute_gravity_scores`` for the candidates'
parents). lxml elements hash by identity, so the order of those sets follows memory
addresses, and when two candidates tie for the top gravity score the library's stable
sort lets the allocator choose the article: the same bytes can give two texts in one
process (upstream pull request https://github.com/AndyTheFactory/newspaper4k/pull/738,
open, in no release). :class:`TieOrderBodyExtractor` puts both back in an order that the
document alone decides. It is installed per article (no global patch), and only for
the methods whose installed source still dedupes through ``set`` (:data:`TIE_FIXES`):
a release that fixes them is used as it is.

This module imports the libraries at its top (quietly: newspaper4k warns about
optional NLP packages at import), so that the workers' fork server imports
them once. Import it only where extraction runs; it is the only module that imports
the extractor libraries.

:func:`prepare_worker` runs once in every worker: newspaper4k asks ``tldextract``
for domain names, and ``tldextract``, by default, downloads the public suffix
list on first use and caches it in the home directory. The worker replaces
that default with the snapshot bundled in ``tldextract`` (no network, no disk,
and the same list on every machine, so the same results).
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any, Final

# The options live beside the descriptions of the calls that each batch records, below
# both this module and the engine (which names this module but never imports it).
from selection_extraction.options import NEWSPAPER_CONFIG, READABILITY_SUMMARY_OPTIONS, TRAFILATURA_OPTIONS

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


#: The library code (``module:qualified name``) whose behaviour the lean paths and the tie fix reproduce or reorder, by
#: distribution. ``tests/data/extractor_sources.json`` pins the SHA-256 of each one's source
#: in the installed release (``scripts/pin_extractor_sources.py``), so that an upgrade that
#: changes any of them fails a test until someone has checked the lean paths against it.
RELIED_ON: Final[dict[str, tuple[str, ...]]] = {
    "newspaper4k": (
        "newspaper:article",
        "newspaper.article:Article.__init__",
        "newspaper.article:Article.download",
        "newspaper.article:Article.parse",
        "newspaper.extractors.content_extractor:ContentExtractor.__init__",
        "newspaper.extractors.content_extractor:ContentExtractor.calculate_best_node",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.parse",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.calculate_best_node",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.compute_gravity_scores",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.nodes_to_check",
    ),
    "readability-lxml": (
        "readability.readability:Document.__init__",
        "readability.readability:Document._html",
        "readability.readability:Document.title",
        "readability.readability:Document.summary",
        "readability.htmls:get_title",
    ),
}


def prepare_worker() -> None:
    """Make ``tldextract`` (used by newspaper4k) offline: bundled public suffix list, no cache."""
    _tldextract.TLD_EXTRACTOR = _tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True)


# --------------------------------------------------------------------------- trafilatura


def extract_trafilatura(html: str, url: str | None) -> tuple[str, str | None]:
    """trafilatura's plain text of the main content (comments excluded)."""
    return trafilatura.extract(html, **TRAFILATURA_OPTIONS) or "", None


# --------------------------------------------------------------------------- newspaper4k: ties in document order


def _dedupes_through_set(method: Callable[..., Any], marker: str) -> bool:
    """Whether the installed ``method`` still holds ``marker`` (its ``set(...)`` dedupe); True without a source."""
    try:
        return marker in inspect.getsource(method)
    except (OSError, TypeError):  # no source shipped: keep the fix, which is harmless on an ordered result
        return True


#: The body extractor's methods that dedupe through ``set`` in newspaper4k 0.9.x, with the
#: text that shows it in their source. A method whose installed source no longer holds it
#: (a release with newspaper4k #738 or a rewrite) is not overridden.
TIE_FIXES: Final[dict[str, str]] = {
    "nodes_to_check": "items = set(items)",
    "compute_gravity_scores": "set(parent_nodes)",
}

#: Which of :data:`TIE_FIXES` the installed newspaper4k needs (decided once, at import).
NEEDED_TIE_FIXES: Final[frozenset[str]] = frozenset(
    name for name, marker in TIE_FIXES.items() if _dedupes_through_set(getattr(ArticleBodyExtractor, name), marker)
)


class TieOrderBodyExtractor(ArticleBodyExtractor):
    """newspaper4k's body extractor with its two ``set`` dedupes put back in an order the document decides.

    * ``nodes_to_check``: the candidate ``div`` s (a ``set`` in the library) in document order;
      the library sorts the whole list by depth with a stable sort, so this order reaches
      the gravity scores (their boosts and penalties depend on each node's rank).
    * ``compute_gravity_scores``: the scored parents and grandparents (a ``set``) in the order
      of their first occurrence, as newspaper4k #738 does with ``dict.fromkeys``; the library
      then sorts them by score with a stable sort, so a tie for the top score goes to the
      first one found, in every call.

    Both methods call the library's own and only reorder its result: the scores, the
    candidates and every other step are the library's.
    """

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
    """The ``Article`` that ``newspaper.article(url, input_html=html, config=...)`` builds, downloaded from ``html``,
    with :class:`TieOrderBodyExtractor` as its body extractor; not parsed yet.

    A fresh ``Config`` for every page: ``parse()`` sets the page's meta language on it.
    """
    article = newspaper.Article(url or "", language=None, config=_newspaper_config())
    article.extractor.article_body_extractor = TieOrderBodyExtractor(article.config)
    article.download(input_html=html)
    return article


def parse_text_and_title(article: newspaper.Article) -> newspaper.Article:
    """``Article.parse()`` reduced to the steps that decide ``text`` and ``title``, in its order.

    Left out: authors, publication date, videos, images (``fetch_images``), the
    metadata fields other than the language. The tests pin the source of
    ``Article.parse`` of the installed release, so that a change there is looked at.
    """
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


def newspaper4k_full_parse(html: str, url: str | None) -> tuple[str, str | None]:
    """The reference of :func:`extract_newspaper4k`: the library's own full ``parse()``, with the same tie fix."""
    article = newspaper4k_article(html, url).parse()
    return article.text or "", article.title or None


def newspaper4k_default(html: str, url: str | None) -> tuple[str, str | None]:
    """The library's default call, without the fix: ``newspaper.article(url, input_html=html, config=...)``."""
    article = newspaper.article(url or "", input_html=html, config=_newspaper_config())
    return article.text or "", article.title or None


# --------------------------------------------------------------------------- readability


class FirstParseTitleDocument(Document):
    """readability's ``Document``, which keeps the title of its first parse.

    ``Document.title()`` is ``get_title(self._html(True))``: a fresh parse and clean of
    the whole page. ``summary()`` begins with that same parse (``self._html(True)``)
    before it changes the tree, so the title read from that first tree is the one
    ``title()`` would give, without parsing the page again.
    """

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


def readability_default(html: str, url: str | None) -> tuple[str, str | None]:
    """The reference of :func:`extract_readability`: ``summary()``, then ``title()`` (which parses the page again)."""
    document = Document(html)
    text = _readability_text(document.summary(**READABILITY_SUMMARY_OPTIONS))
    try:
        title = document.title()
    except Exception:  # noqa: BLE001 - the title is informational; the text is what counts
        title = None
    return text, title
