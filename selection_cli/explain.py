"""``content-selection explain``: one article's decision, in words, for a person at a terminal; nothing is written."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from selection_cli.arguments import add_storage_options, storage_options, whole_number
from selection_core.config import FALLBACK, PRIORITY, TIE_MARGIN
from selection_core.evidence import ARTICLE_ID_FIELDS, TABLE_DIGITS
from selection_core.select import Candidate, Pool, Reason, Selection, State


def add_explain_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("input", metavar="BATCH", help='batch JSON file: {"articles": [...]}')
    which = parser.add_mutually_exclusive_group(required=True)
    index = whole_number(0, "an index is 0 or more, not {value}")
    which.add_argument("--index", type=index, metavar="N", help="the article at this position (0 is the first)")
    which.add_argument("--id", dest="article_id", metavar="ID", help="the first article whose id is ID")
    add_storage_options(parser)
    return parser


def explain_command(args: argparse.Namespace) -> int:
    from selection_core.select import select_article
    from selection_engine.lookup import find_article
    from selection_storage.stores import location

    options = storage_options(args)
    # reads only that article
    found = find_article(args.input, index=args.index, article_id=args.article_id, storage_options=options)
    selection = select_article(found.article, found.index)
    print(explain_text(found.article, selection, location(args.input).name, found.total))
    return 0


#: Cells of a full bar (a value of 1); each cell is drawn in eighths.
BAR_CELLS: Final[int] = 24
_EIGHTHS: Final[str] = " ▏▎▍▌▋▊▉"
_MARGIN: Final[str] = f"{TIE_MARGIN.numerator}/{TIE_MARGIN.denominator}"
_PRIORITY: Final[str] = " > ".join(PRIORITY)


def bar(value: Fraction | None, cells: int = BAR_CELLS) -> str:
    """A text bar of ``value`` (0 to 1), ``cells`` wide when full, exact to an eighth of a cell (rounded down)."""
    if value is None:
        return ""
    eighths = int(min(max(value, Fraction(0)), Fraction(1)) * cells * 8)  # int() of a Fraction is exact
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


def _number(value: Fraction | None) -> str:
    return "–" if value is None else f"{float(value):.{TABLE_DIGITS}f}"


def pool_text(selection: Selection) -> str:
    """Which candidates were compared (the active set of the rule)."""
    state = {Pool.USABLE: State.USABLE, Pool.DEGRADED: State.DEGRADED}.get(selection.pool)
    names = ", ".join(c.name for c in selection.candidates if c.state is state)
    if selection.pool is Pool.USABLE:
        return f"the usable candidates: {names}"
    if selection.pool is Pool.DEGRADED:
        return f"no candidate is usable, so the degraded ones (text, but an error reported): {names}"
    return "none: every candidate is unavailable"


def reason_text(selection: Selection) -> str:
    """Why the rule picked what it picked, in the words of ``docs/rule.md``."""
    chosen, pool = selection.selected, list(selection.tie_pool)
    counts = {c.name: c.shingle_count for c in selection.candidates}
    if selection.reason is Reason.ALL_UNAVAILABLE:
        return f"No candidate has text with tokens, so {FALLBACK} is selected by default."
    if selection.reason is Reason.SINGLE_CANDIDATE:
        return f"{chosen} is the only active candidate, so it is selected without computing a consensus."
    if selection.reason in (Reason.NO_CONSENSUS_MEDIAN, Reason.NO_CONSENSUS_LARGEST):
        how = (
            "with three active candidates the median shingle count wins"
            if selection.reason is Reason.NO_CONSENSUS_MEDIAN
            else "with two active candidates the larger shingle count wins"
        )
        text = f"No shingle is in two active candidates (the consensus is empty); {how}: {counts[chosen]}."
        if len(pool) > 1:
            text += f" {', '.join(pool)} have that count; the priority {_PRIORITY} picks {chosen}."
        return text
    within = f"within {_MARGIN} of the top score"
    if selection.reason is Reason.CONSENSUS_TOP_SCORE:
        return f"{chosen} has the top score and no other candidate is within {_MARGIN} of it."
    fewest = min(counts[name] for name in pool)
    text = f"{', '.join(pool)} are {within} (a tie)"
    if selection.reason is Reason.CONSENSUS_TIE_FEWEST_SHINGLES:
        return f"{text}, and the one with the fewest shingles wins: {chosen}, with {fewest}."
    at_fewest = [name for name in pool if counts[name] == fewest]
    shared = f"{', '.join(at_fewest)} share the fewest shingles ({fewest})"
    return f"{text}; {shared}, so the priority {_PRIORITY} picks {chosen}."


def _candidate_lines(candidate: Candidate, selection: Selection) -> list[str]:
    marks = []
    if candidate.name == selection.selected:
        marks.append("selected")
    if candidate.name in selection.tie_pool and len(selection.tie_pool) > 1:
        marks.append("in the tie pool")
    head = f"{candidate.name:<12} {candidate.state.value}"
    if candidate.state is not State.UNAVAILABLE:
        head += f", {candidate.token_count} tokens, {candidate.shingle_count} shingles"
    if candidate.overlap is not None:
        head += f", {candidate.overlap} in the consensus"
    lines = [head + (f"   <- {', '.join(marks)}" if marks else "")]
    if candidate.score is not None:
        measures = (("coverage", candidate.coverage), ("support", candidate.support), ("score", candidate.score))
        for label, value in measures:
            lines.append(f"  {label:<9}{_number(value)}  {bar(value)}".rstrip())
    return lines


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def explain_text(article: Mapping[str, Any], selection: Selection, batch_name: str, total: int | None = None) -> str:
    """The decision for one article (its ``id`` and ``url`` shown), as lines of text without a final newline;
    ``total``: the batch's number of articles, when known."""
    of = f" of {total}" if total is not None else ""
    lines = [f"Article {selection.index}{of} in {batch_name}"]
    lines += [f"  {name:<4} {_label(article[name])}" for name in ARTICLE_ID_FIELDS if article.get(name) is not None]
    lines += ["", f"Selected: {selection.selected} ({selection.reason.value})", "", "Candidates"]
    for candidate in selection.candidates:
        lines += ["  " + line for line in _candidate_lines(candidate, selection)]
    lines += ["", f"Compared: {pool_text(selection)}."]
    if selection.consensus_size is not None:
        lines.append(f"Consensus: {selection.consensus_size} shingles are in at least two active candidates.")
    if len(selection.tie_pool) > 1:
        lines.append(
            f"Tie pool: {', '.join(selection.tie_pool)} "
            "(the candidates that were tied; the tie-breaks are taken among them)."
        )
    lines.append(f"Why: {reason_text(selection)}")
    if any(c.score is not None for c in selection.candidates):
        lines += ["", "Coverage = |S∩C|/|C|, support = |S∩C|/|S|, score = their F1 (exact fractions: --report)."]
    return "\n".join(lines)
