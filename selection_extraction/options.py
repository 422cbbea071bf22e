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

#: The newspaper4k call, as recorded in the batch.
NEWSPAPER_CALL: Final[str] = (
    "newspaper.article(url, input_html=html, config=Config(fetch_images=False, memorize_articles=False))"
)

#: The readability call, as recorded in the batch.
READABILITY_CALL: Final[str] = "html_text.extract_text(Document(html).summary(html_partial=True))"
