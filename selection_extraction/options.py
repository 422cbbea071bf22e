"""How the three extractors are called: their options, and the description of each call a batch records.

The lowest module of the extract step: :mod:`selection_extraction.adapters` calls the
libraries with these options, and :mod:`selection_extraction.extractors` records them
(and the calls) in every batch. It imports nothing, so neither of them imports the other.
"""

from __future__ import annotations

from typing import Any, Final

#: Keyword arguments of ``trafilatura.extract`` (besides the HTML).
TRAFILATURA_OPTIONS: Final[dict[str, Any]] = {"include_comments": False}

#: newspaper4k ``Config`` attributes set for every page.
NEWSPAPER_CONFIG: Final[dict[str, Any]] = {"fetch_images": False, "memorize_articles": False}

#: Keyword arguments of readability's ``Document.summary``.
READABILITY_SUMMARY_OPTIONS: Final[dict[str, Any]] = {"html_partial": True}

#: The trafilatura call, as recorded in the batch.
TRAFILATURA_CALL: Final[str] = "trafilatura.extract(html, include_comments=False)"

#: The newspaper4k call, as recorded in the batch (with the library's version beside it, and
#: :data:`NEWSPAPER_LEAN_PATH` and :data:`NEWSPAPER_TIE_ORDER` in its settings).
NEWSPAPER_CALL: Final[str] = (
    "newspaper.article(url, input_html=html, config=Config(fetch_images=False, memorize_articles=False)) "
    "text and title, by a lean Article.parse() (no authors, publish date, videos, images), "
    "ties in document order (newspaper4k #738)"
)

#: What the lean path runs of ``Article.parse()`` (recorded in the batch's newspaper4k settings).
NEWSPAPER_LEAN_PATH: Final[str] = "parse, title, metadata (for the language), body extractor, cleaner, formatter"

#: How the body extractor's ties are resolved (recorded in the batch's newspaper4k settings).
NEWSPAPER_TIE_ORDER: Final[str] = (
    "candidate divs in document order, scored parents in order of first occurrence "
    "(https://github.com/AndyTheFactory/newspaper4k/pull/738), where the installed release dedupes them through set()"
)

#: The readability call, as recorded in the batch.
READABILITY_CALL: Final[str] = (
    "html_text.extract_text(Document(html).summary(html_partial=True)), "
    "title Document.title() read from summary()'s first parse of the page"
)
