"""The dataset: one row per article, the selected extractor's text with the columns web datasets use.

A selection's output is either the selected batch (every article with ``selected_extractor`` set: the evidence of
every decision) or the dataset (what a user loads: the selected text, its language and where it came from). This
module turns selected articles into dataset rows, as plain values; the language model (a file the core does not
read) and the file format (Parquet) are the engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NamedTuple

import orjson

from .config import TEXT_FIELDS
from .select import Selection, fraction_float

#: The output kinds: the selected batch (the default), or the dataset.
BATCH: Final[str] = "batch"
DATASET: Final[str] = "dataset"
OUTPUT_FORMATS: Final[tuple[str, ...]] = (BATCH, DATASET)


class Column(NamedTuple):
    """A column of the dataset: its name, its type (``"string"`` or ``"float"``), the article keys its value is
    read from (the first present wins; None: computed from the selection) and its meaning."""

    name: str
    type: str
    sources: tuple[str, ...] | None
    doc: str


#: A text's language and that language's score, or ``("und", None)`` (the engine's: ``selection_engine.language``).
LanguageOf = Callable[[str], tuple[str, float | None]]

#: The dataset's columns, in order (FineWeb's first: ``text``, ``id``, ``dump``, ``url``, ``date``, ``file_path``,
#: ``language``, ``language_score``).
COLUMNS: Final[tuple[Column, ...]] = (
    Column("text", "string", None, "the selected extractor's text as the batch holds it; '' where it has none"),
    Column("id", "string", ("id",), "the article's id (a WARC page's WARC-Record-ID)"),
    Column("dump", "string", ("warc_dump",), "the crawl a WARC's warcinfo names (isPartOf), e.g. CC-MAIN-2024-18"),
    Column("url", "string", ("url",), "the page's URL"),
    Column("date", "string", ("warc_date", "date"), "a WARC page's WARC-Date, else the article's own date"),
    Column("file_path", "string", ("path",), "the page's file, or the WARC it is in (a path or a URL)"),
    Column(
        "language",
        "string",
        None,
        "the text's language as fastText's lid.176 labels it (ISO 639-1 where the "
        "language has a code); 'und' where the text has no letter",
    ),
    Column("language_score", "float", None, "the probability of that language, to 4 decimals; null for 'und'"),
    Column("selected_extractor", "string", None, "the extractor whose text was selected"),
    Column("reason", "string", None, "the reason code of the rule that decided (docs/rule.md)"),
    Column("score", "float", None, "the selected candidate's score (F1 against the consensus); null without one"),
)

#: The names of :data:`COLUMNS`, in order.
COLUMN_NAMES: Final[tuple[str, ...]] = tuple(column.name for column in COLUMNS)


def _text_value(value: Any) -> str | None:
    """A metadata value as the dataset holds it: a string as it is, nothing as null, anything else as its JSON."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def selected_text(article: Mapping[str, Any], extractor: str) -> str:
    """The text the batch holds for ``extractor`` in ``article`` (its text field); ``""`` where there is none."""
    block = article.get(extractor)
    text = block.get(TEXT_FIELDS[extractor]) if isinstance(block, Mapping) else None
    return text if isinstance(text, str) else ""


def dataset_row(article: Mapping[str, Any], selection: Selection, language_of: LanguageOf) -> dict[str, Any]:
    """The dataset's row of one selected article, its values in :data:`COLUMNS` order, its text's language given by
    ``language_of``.

    >>> from selection_core.select import select_article
    >>> article = {"id": "a1", "url": "https://example.org/a1", "trafilatura": {"text": "Ships sail at dawn."}}
    >>> row = dataset_row(article, select_article(article), lambda text: ("en", 0.75))
    >>> row["text"], row["id"], row["dump"], row["language"], row["language_score"], row["selected_extractor"]
    ('Ships sail at dawn.', 'a1', None, 'en', 0.75, 'trafilatura')
    >>> row["reason"], row["score"]
    ('single_candidate', None)
    """
    text = selected_text(article, selection.selected)
    language, language_score = language_of(text)
    computed = {
        "text": text,
        "language": language,
        "language_score": language_score,
        "selected_extractor": selection.selected,
        "reason": selection.reason.value,
        "score": fraction_float(selection.candidate(selection.selected).score),
    }
    row: dict[str, Any] = {}
    for column in COLUMNS:
        if column.sources is None:
            row[column.name] = computed[column.name]
        else:
            found = next((article[key] for key in column.sources if article.get(key) is not None), None)
            row[column.name] = _text_value(found)
    return row


def render_rows(
    articles: Sequence[Mapping[str, Any]], selections: Sequence[Selection], language_of: LanguageOf
) -> bytes:
    """The dataset rows of selected articles as JSON Lines (how a chunk's rows travel to the file's writer)."""
    rows = [dataset_row(a, s, language_of) for a, s in zip(articles, selections, strict=True)]
    return b"".join([orjson.dumps(row) + b"\n" for row in rows])
