"""The evidence of a run, for people: the scores table's rows and the summary markdown.

Built from the explanations the rule returns, by pure functions: their content
depends only on the batch and the selections (no clock, no hash order). The
Prefect task ``publish-artifacts`` (:mod:`tasks.artifacts`) publishes them as the
artifacts ``selection-scores`` (a table: one row per article, capped at
``max_rows``, the cap stated in the description) and ``selection-summary`` (counts
per extractor and per reason, paths, SHA-256 of input and output, versions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import orjson

from selection_core.batch import Summary
from selection_core.markdown import md_cell
from selection_core.select import Candidate, Selection

#: Artifact keys (lowercase with dashes, as the Prefect UI requires).
SCORES_ARTIFACT_KEY: Final[str] = "selection-scores"
SUMMARY_ARTIFACT_KEY: Final[str] = "selection-summary"

#: Article fields copied into the table when the article has them.
ARTICLE_ID_FIELDS: Final[tuple[str, ...]] = ("id", "url", "title")

#: Longest text kept from an article field in a table cell.
MAX_CELL_CHARS: Final[int] = 200

#: Decimal places of coverage, support and score in the table.
TABLE_DIGITS: Final[int] = 4


def counts_text(counts: Mapping[Any, int]) -> str:
    """``<name> <count>, ...`` in the mapping's order: how logs, summaries and the terminal list counts.

    >>> counts_text({"trafilatura": 1, "newspaper4k": 10})
    'trafilatura 1, newspaper4k 10'
    """
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def score_rows(doc: dict[str, Any], selections: Sequence[Selection], max_rows: int) -> list[dict[str, Any]]:
    """One table row per article (the first ``max_rows``), from its explanation.

    Columns: ``index``; ``id``, ``url``, ``title`` when at least one shown article
    has that field; ``selected``, ``reason``, ``pool``, ``consensus_size``,
    ``tie_pool``; then for each extractor (in ``EXTRACTORS`` order) its
    ``state``, ``shingles``, ``coverage``, ``support`` and ``score``.
    Every row has the same columns in the same order.

    Example:
        >>> score_rows({"articles": []}, [], max_rows=10)
        []
    """
    articles = doc["articles"]
    return align_rows([article_row(articles[s.index], s) for s in selections[: max(max_rows, 0)]])


def article_row(article: dict[str, Any], selection: Selection) -> dict[str, Any]:
    """The row of one article, with only the id fields it has (see :func:`align_rows`).

    Built where the article is (a worker scoring a chunk), so that only rows,
    never articles, travel back to the flow.
    """
    row: dict[str, Any] = {"index": selection.index}
    row.update((field, _cell(article[field])) for field in ARTICLE_ID_FIELDS if field in article)
    row.update(
        selected=selection.selected,
        reason=_value(selection.reason),
        pool=_value(selection.pool),
        consensus_size=selection.consensus_size,
        tie_pool=" ".join(selection.tie_pool),
    )
    for candidate in selection.candidates:
        row.update(candidate_cells(candidate))
    return row


def candidate_cells(candidate: Candidate) -> dict[str, Any]:
    """One extractor's columns of a row: ``<name>_state``, ``_shingles``, ``_coverage``, ``_support``, ``_score``."""
    prefix = candidate.name
    return {
        f"{prefix}_state": _value(candidate.state),
        f"{prefix}_shingles": candidate.shingle_count,
        f"{prefix}_coverage": _ratio(candidate.coverage),
        f"{prefix}_support": _ratio(candidate.support),
        f"{prefix}_score": _ratio(candidate.score),
    }


def align_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the same columns: an id field shown when any row has it (None where missing).

    >>> align_rows([{"index": 0, "selected": "a"}, {"index": 1, "url": "u", "selected": "b"}])
    [{'index': 0, 'url': None, 'selected': 'a'}, {'index': 1, 'url': 'u', 'selected': 'b'}]
    """
    id_fields = [f for f in ARTICLE_ID_FIELDS if any(f in row for row in rows)]
    aligned: list[dict[str, Any]] = []
    for row in rows:
        out: dict[str, Any] = {"index": row["index"]}
        for field in id_fields:
            out[field] = row.get(field)
        out.update((k, v) for k, v in row.items() if k != "index" and k not in ARTICLE_ID_FIELDS)
        aligned.append(out)
    return aligned


def scores_description(batch_name: str, shown: int, total: int, max_rows: int) -> str:
    """The table artifact's description, which states the cap."""
    text = (
        f"Selection evidence for {batch_name}: {shown} of {total} articles shown (capped at max_table_rows={max_rows})."
    )
    if shown < total:
        text += " Set the report_path parameter to get every article as JSON Lines."
    return text


def summary_markdown(
    *,
    summary: Summary,
    input_path: Path,
    input_sha256: str,
    output_path: Path,
    output_sha256: str,
    report_path: Path | None,
    versions: dict[str, str],
    shown_rows: int,
    max_rows: int,
) -> str:
    """The ``selection-summary`` markdown: counts, paths, fingerprints and versions."""
    total = summary.articles
    lines = [
        f"# Content selection: {md_cell(input_path.name)}",
        "",
        "| | |",
        "|---|---|",
        f"| Articles | {total} |",
        f"| Input | `{md_cell(str(input_path))}` |",
        f"| Input SHA-256 | `{input_sha256}` |",
        f"| Output | `{md_cell(str(output_path))}` |",
        f"| Output SHA-256 | `{output_sha256}` |",
        f"| Report (JSON Lines) | {f'`{md_cell(str(report_path))}`' if report_path else 'not written'} |",
        "",
        "## Selections per extractor",
        "",
        "| Extractor | Articles | Share |",
        "|---|---:|---:|",
    ]
    for name, count in summary.by_extractor.items():
        lines.append(f"| {name} | {count} | {_share(count, total)} |")
    lines += ["", "## Decisions per reason", "", "| Reason | Articles |", "|---|---:|"]
    for reason, count in summary.by_reason.items():
        lines.append(f"| `{_value(reason)}` | {count} |")
    if not summary.by_reason:
        lines.append("| (no articles) | 0 |")
    lines += ["", "## Versions", "", "| Component | Version |", "|---|---|"]
    for name, version in versions.items():
        lines.append(f"| {name} | {version} |")
    lines += [
        "",
        f"The table `{SCORES_ARTIFACT_KEY}` shows {shown_rows} of {total} articles (max_table_rows={max_rows}).",
        "",
    ]
    return "\n".join(lines)


def _value(item: Any) -> Any:
    """The plain value of a str enum (or the item itself)."""
    return getattr(item, "value", item)


def _ratio(value: Any) -> float | None:
    return None if value is None else round(float(value), TABLE_DIGITS)


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def _share(count: int, total: int) -> str:
    if total == 0:
        return "–"
    return f"{100 * count / total:.1f} %"
