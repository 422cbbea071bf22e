"""The evidence of a selection, as plain values: the scores table's rows, the closest calls, the report lines."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from selection_core.config import EXTRACTORS
from selection_core.select import Candidate, Reason, Selection, State

#: Artifact keys (lowercase with dashes, as the Prefect UI requires).
SCORES_ARTIFACT_KEY: Final[str] = "selection-scores"
SUMMARY_ARTIFACT_KEY: Final[str] = "selection-summary"
CLOSEST_CALLS_ARTIFACT_KEY: Final[str] = "selection-closest-calls"

#: Article fields that name it: copied into each report line; the first one it has labels it in the artifacts.
ARTICLE_ID_FIELDS: Final[tuple[str, ...]] = ("id", "url")

#: Longest article label in the table, and in the closest calls (the V2 UI does not scroll them).
ARTICLE_LABEL_CHARS: Final[int] = 24
CLOSE_CALL_LABEL_CHARS: Final[int] = 12

#: Decimal places of the scores shown in the artifacts.
TABLE_DIGITS: Final[int] = 4

#: The columns of the ``selection-scores`` table (the article last: what was picked and why is never cut off).
TABLE_COLUMNS: Final[tuple[str, ...]] = ("index", "selected", "reason", *EXTRACTORS, "article")

#: The reasons of a close call: a tie broken by shingle count or priority, or a fallback (all but a clear answer).
CLOSE_CALL_REASONS: Final[frozenset[Reason]] = frozenset(Reason) - {Reason.CONSENSUS_TOP_SCORE, Reason.SINGLE_CANDIDATE}

#: Most closest calls listed in the ``selection-closest-calls`` artifact (the first ones of the batch).
MAX_CLOSEST_CALLS: Final[int] = 50

# A URL without scheme and "www.": shorter, and no autolink, which the V1 UI would escape twice ("a&amp;b").
_URL_PREFIX = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*://)?(?:www\.)?")
_IS_URL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*://|www\.)")
# Characters a URL cannot hold (RFC 3986) that Markdown or HTML would read as syntax: percent-encoded.
_URL_UNSAFE = re.compile(r'[\x00-\x20<>"`\\^{}|\x7f]')


def counts_text(counts: Mapping[Any, int]) -> str:
    """``<name> <count>, ...`` in the mapping's order: how logs, summaries and the terminal list counts."""
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def shorten(text: str, limit: int = ARTICLE_LABEL_CHARS) -> str:
    """``text`` if it fits in ``limit`` characters, else its start and end around one ``…``."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 2
    return text[: limit - 1 - tail] + "…" + text[len(text) - tail :]


def display_url(url: str) -> str:
    """A URL as the artifacts show it: without scheme and ``www.``, unsafe characters percent-encoded."""
    return _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), _URL_PREFIX.sub("", url))


def article_label(article: Mapping[str, Any], limit: int = ARTICLE_LABEL_CHARS) -> str | None:
    """How the artifacts name an article: its ``id``, else its ``url`` (a URL as :func:`display_url`), shortened;
    None with neither."""
    for name in ARTICLE_ID_FIELDS:
        value = article.get(name)
        if value is None or value == "":
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = display_url(text) if _IS_URL.match(text) else " ".join(text.split())
        return shorten(text, limit)
    return None


def score_cell(candidate: Candidate) -> float | str | None:
    """An extractor's cell in the table: its score (rounded), else its state when not usable, else None."""
    if candidate.score is not None:
        return _ratio(candidate.score)
    return None if candidate.state is State.USABLE else candidate.state.value


def article_row(article: Mapping[str, Any], selection: Selection) -> dict[str, Any]:
    """The row of one article, before :func:`align_rows` drops the columns no shown row fills."""
    row: dict[str, Any] = {"index": selection.index, "selected": selection.selected, "reason": selection.reason.value}
    row.update((candidate.name, score_cell(candidate)) for candidate in selection.candidates)
    row["article"] = article_label(article)
    return row


def align_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the same columns, in :data:`TABLE_COLUMNS` order, less those empty in every row."""
    columns = [c for c in TABLE_COLUMNS if any(row.get(c) is not None for row in rows)]
    return [{c: row.get(c) for c in columns} for row in rows]


def close_call_entries(
    articles: Sequence[Mapping[str, Any]], selections: Sequence[Selection], limit: int = MAX_CLOSEST_CALLS
) -> list[dict[str, Any]]:
    """The first ``limit`` close calls among ``selections`` (of ``articles``), as plain values for a worker to send."""
    entries: list[dict[str, Any]] = []
    for article, selection in zip(articles, selections, strict=True):
        if len(entries) >= limit:
            break
        if selection.reason in CLOSE_CALL_REASONS:
            entries.append(
                {
                    "index": selection.index,
                    "article": article_label(article, CLOSE_CALL_LABEL_CHARS),
                    "selected": selection.selected,
                    "reason": selection.reason.value,
                    "consensus_size": selection.consensus_size,
                    "tie_pool": list(selection.tie_pool),
                    "candidates": [
                        [c.name, c.state.value, c.shingle_count, _ratio(c.score)] for c in selection.candidates
                    ],
                }
            )
    return entries


@dataclass(frozen=True)
class ShownEvidence:
    """What the artifacts show of the articles: the table's rows and the first closest calls."""

    rows: list[dict[str, Any]]
    close_calls: list[dict[str, Any]]


def merge_evidence(
    chunks: Iterable[tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]], max_rows: int
) -> ShownEvidence:
    """The shown evidence of a batch selected in chunks, from each chunk's ``(rows, close_calls)`` in order: the
    first ``max_rows`` rows (:func:`align_rows`) and the first :data:`MAX_CLOSEST_CALLS` close calls."""
    rows: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for chunk_rows, chunk_calls in chunks:
        rows.extend(chunk_rows)
        calls.extend(chunk_calls)
    return ShownEvidence(align_rows(rows[: max(max_rows, 0)]), calls[:MAX_CLOSEST_CALLS])


def report_entry(article: Mapping[str, Any], selection: Selection) -> dict[str, Any]:
    """One line of the JSON Lines report: ``index``, the article's ``id`` and ``url`` (when it has them),
    then the explanation (:meth:`Selection.to_dict`)."""
    explanation = selection.to_dict()
    entry: dict[str, Any] = {"index": explanation.pop("index")}
    entry.update((name, article[name]) for name in ARTICLE_ID_FIELDS if article.get(name) is not None)
    entry.update(explanation)
    return entry


def read_as_text(chunks: int, where: str = "one after the other in this process") -> str:
    """How a run read its batch, for its log and its summary artifact."""
    return f"in {chunks} chunk{'' if chunks == 1 else 's'} of articles, {where}"


def _ratio(value: Any) -> float | None:
    return None if value is None else round(float(value), TABLE_DIGITS)


# Inline syntax of Markdown, GFM or HTML; an "_" between two letters or digits never emphasizes (CommonMark).
_TEXT_SYNTAX: Final[re.Pattern[str]] = re.compile(r"([\\`*\[\]<>|&~!]|(?<![^\W_])_|_(?![^\W_]))")
_BACKTICKS: Final[re.Pattern[str]] = re.compile(r"`+")
_LINE_BREAK: Final[re.Pattern[str]] = re.compile(r"\r\n?|\n")


def md_cell(text: str) -> str:
    """``text`` for a Markdown table cell, heading or paragraph: on one line, shown as it is."""
    return _TEXT_SYNTAX.sub(r"\\\1", _LINE_BREAK.sub(" ", text))


def md_code(text: str) -> str:
    """``text`` as an inline code span for a Markdown table cell: literal, on one line."""
    # Backslashes are literal in a code span; only "|" needs one, as GFM splits rows before it reads spans.
    line = _LINE_BREAK.sub(" ", text).replace("|", "\\|")
    if not line:
        return ""
    # One backtick longer than any run inside; a space pad when at an end (CommonMark strips one).
    fence = "`" * (1 + max((len(run) for run in _BACKTICKS.findall(line)), default=0))
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"
