"""The selection rule: one article in, one explained decision out; every deciding comparison is exact."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import selection_core.kernel as kernel

from .config import (
    CONSENSUS_MIN_VOTES,
    ERROR_FIELD,
    EXTRACTORS,
    FALLBACK,
    FLOAT_DIGITS,
    PRIORITY,
    TEXT_FIELDS,
    TIE_MARGIN,
)
from .normalize import nfkc_form
from .shingles import LineCache, Shingle, text_shingles


class State(enum.StrEnum):
    """What a candidate can contribute."""

    USABLE = "usable"
    DEGRADED = "degraded"  # has text, but its block reports an error
    UNAVAILABLE = "unavailable"  # no block, no string text, or no tokens


class Pool(enum.StrEnum):
    """Which candidates were compared."""

    USABLE = "usable"
    DEGRADED = "degraded"
    NONE = "none"


class Reason(enum.StrEnum):
    """The rule that decided."""

    CONSENSUS_TOP_SCORE = "consensus_top_score"
    CONSENSUS_TIE_FEWEST_SHINGLES = "consensus_tie_fewest_shingles"
    CONSENSUS_TIE_PRIORITY = "consensus_tie_priority"
    NO_CONSENSUS_MEDIAN = "no_consensus_median"
    NO_CONSENSUS_LARGEST = "no_consensus_largest"
    SINGLE_CANDIDATE = "single_candidate"
    ALL_UNAVAILABLE = "all_unavailable"


def _fraction_text(value: Fraction | None) -> str | None:
    return None if value is None else f"{value.numerator}/{value.denominator}"


def fraction_float(value: Fraction | None) -> float | None:
    """The informational float copy of an exact value, rounded to ``FLOAT_DIGITS`` places."""
    # float(Fraction) is correctly rounded and round() is exact on it: the same on every machine.
    return None if value is None else round(float(value), FLOAT_DIGITS)


@dataclass(frozen=True)
class Candidate:
    """One extractor's evidence for one article; ``overlap`` (|S∩C|) and the ratios are ``None`` when no
    consensus was computed for it."""

    name: str
    state: State
    token_count: int
    shingle_count: int
    overlap: int | None = None
    coverage: Fraction | None = None
    support: Fraction | None = None
    score: Fraction | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: exact values as ``"n/d"`` strings, plus rounded floats."""
        return {
            "name": self.name,
            "state": self.state.value,
            "token_count": self.token_count,
            "shingle_count": self.shingle_count,
            "overlap": self.overlap,
            "coverage": _fraction_text(self.coverage),
            "support": _fraction_text(self.support),
            "score": _fraction_text(self.score),
            "coverage_float": fraction_float(self.coverage),
            "support_float": fraction_float(self.support),
            "score_float": fraction_float(self.score),
        }


@dataclass(frozen=True)
class Selection:
    """The decision for one article and everything needed to re-derive it (``tie_pool``: see docs/rule.md)."""

    index: int
    selected: str
    reason: Reason
    pool: Pool
    consensus_size: int | None
    tie_pool: tuple[str, ...]
    candidates: tuple[Candidate, ...]

    def candidate(self, name: str) -> Candidate:
        for cand in self.candidates:
            if cand.name == name:
                return cand
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form used by ``--report`` (one object per article)."""
        return {
            "index": self.index,
            "selected_extractor": self.selected,
            "reason": self.reason.value,
            "pool": self.pool.value,
            "consensus_size": self.consensus_size,
            "tie_pool": list(self.tie_pool),
            "candidates": [c.to_dict() for c in self.candidates],
        }


def error_present(value: Any) -> bool:
    """Whether a block's ``error`` value reports an error: anything but ``None`` (missing), ``False`` and
    a blank string."""
    if value is None or value is False:
        return False
    if isinstance(value, str):
        return value.strip() != ""
    return True


def _by_priority(names: list[str] | tuple[str, ...]) -> str:
    return min(names, key=PRIORITY.index)


def _texts(article: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None, str | None]]:
    """Each extractor's name, block and text (``None`` unless a string), in EXTRACTORS order."""
    found: list[tuple[str, Mapping[str, Any] | None, str | None]] = []
    for name in EXTRACTORS:
        block = article.get(name)
        text = block.get(TEXT_FIELDS[name]) if isinstance(block, Mapping) else None
        found.append((name, block, text) if isinstance(text, str) else (name, None, None))
    return found


def _candidate(name: str, block: Mapping[str, Any] | None, token_count: int, shingle_count: int) -> Candidate:
    if block is None or token_count == 0:
        return Candidate(name, State.UNAVAILABLE, 0, 0)
    state = State.DEGRADED if error_present(block.get(ERROR_FIELD)) else State.USABLE
    return Candidate(name, state, token_count, shingle_count)


def _measure(article: Mapping[str, Any]) -> tuple[list[Candidate], dict[str, frozenset[Shingle]]]:
    """State, token count and shingle set of each extractor, in EXTRACTORS order."""
    measured: list[Candidate] = []
    sets: dict[str, frozenset[Shingle]] = {}
    seen: dict[str, tuple[int, frozenset[Shingle]]] = {}  # equal texts are measured once
    lines = LineCache()
    for name, block, text in _texts(article):
        token_count, sh = 0, frozenset[Shingle]()
        if text is not None:
            if text not in seen:
                seen[text] = text_shingles(text, lines)
            token_count, sh = seen[text]
        measured.append(_candidate(name, block, token_count, len(sh)))
        if measured[-1].state is not State.UNAVAILABLE:
            sets[name] = sh
    return measured, sets


def _measure_sizes(article: Mapping[str, Any]) -> tuple[list[Candidate], tuple[int, ...]] | None:
    """The candidates and the shingle sets' Venn regions, by the compiled kernel (:func:`kernel.article_counts`);
    ``None`` when the kernel cannot take the article."""
    entries = _texts(article)
    forms: dict[str, str] = {}  # equal texts are normalized once
    for _, _, text in entries:
        if text is not None and text not in forms:
            forms[text] = nfkc_form(text)
    found = kernel.article_counts(tuple(None if t is None else forms[t] for _, _, t in entries))
    if found is None:
        return None
    token_counts, regions = found
    measured = [
        _candidate(name, block, token_counts[i], sum(size for m, size in enumerate(regions) if m >> i & 1))
        for i, (name, block, _) in enumerate(entries)
    ]
    return measured, regions


def _consensus_from_regions(regions: tuple[int, ...], active: list[int]) -> tuple[int, list[int]]:
    """|C| and |S ∩ C| for each active extractor (by EXTRACTORS index), from the regions."""
    active_bits = sum(1 << i for i in active)
    c_size = 0
    overlaps = [0] * len(active)
    for m, size in enumerate(regions):
        if size and (m & active_bits).bit_count() >= CONSENSUS_MIN_VOTES:
            c_size += size
            for k, i in enumerate(active):
                if m >> i & 1:
                    overlaps[k] += size
    return c_size, overlaps


def _inter(x: frozenset[Shingle], y: frozenset[Shingle]) -> frozenset[Shingle]:
    return x if x is y else x & y


def _consensus_counts(active_sets: list[frozenset[Shingle]]) -> tuple[int, list[int]]:
    """|C| and |S ∩ C| for each active set, C = shingles in at least two sets."""
    # Inclusion-exclusion over pairwise intersections: |C| = |AB| + |AC| + |BC| - 2|ABC|,
    # |A ∩ C| = |AB| + |AC| - |ABC|; no set larger than an intersection is built.
    assert CONSENSUS_MIN_VOTES == 2  # the algebra below encodes "at least two"
    if len(active_sets) == 2:
        n = len(_inter(*active_sets))
        return n, [n, n]
    a, b, c = active_sets
    ab = _inter(a, b)
    ac, bc = len(_inter(a, c)), len(_inter(b, c))
    abc = len(_inter(ab, c)) if len(ab) <= len(c) else len(_inter(c, ab))
    n_ab = len(ab)
    return n_ab + ac + bc - 2 * abc, [n_ab + ac - abc, n_ab + bc - abc, ac + bc - abc]


def select_article(article: Mapping[str, Any], index: int = 0) -> Selection:
    """Apply the selection rule to one article (a mapping of extractor blocks)."""
    sized = _measure_sizes(article) if kernel.KERNEL is not None else None
    if sized is not None:
        measured, regions = sized
    else:
        measured, sets = _measure(article)
    usable = [c.name for c in measured if c.state is State.USABLE]
    degraded = [c.name for c in measured if c.state is State.DEGRADED]
    if usable:
        active, pool = usable, Pool.USABLE
    elif degraded:
        active, pool = degraded, Pool.DEGRADED
    else:
        return Selection(index, FALLBACK, Reason.ALL_UNAVAILABLE, Pool.NONE, None, (), tuple(measured))

    if len(active) == 1:
        return Selection(index, active[0], Reason.SINGLE_CANDIDATE, pool, None, (active[0],), tuple(measured))

    if sized is not None:
        c_size, overlaps = _consensus_from_regions(regions, [EXTRACTORS.index(name) for name in active])
    else:
        c_size, overlaps = _consensus_counts([sets[name] for name in active])
    overlap_of = dict(zip(active, overlaps))
    counts = {c.name: c.shingle_count for c in measured}

    if c_size == 0:
        values = sorted(counts[name] for name in active)
        if len(active) == 3:
            target, reason = values[1], Reason.NO_CONSENSUS_MEDIAN
        else:
            target, reason = values[-1], Reason.NO_CONSENSUS_LARGEST
        at_target = tuple(name for name in active if counts[name] == target)
        return Selection(index, _by_priority(at_target), reason, pool, 0, at_target, tuple(measured))

    scored: list[Candidate] = []
    scores: dict[str, Fraction] = {}
    for cand in measured:
        if cand.name not in active:
            scored.append(cand)
            continue
        overlap = overlap_of[cand.name]
        score = Fraction(2 * overlap, c_size + cand.shingle_count)
        scores[cand.name] = score
        coverage, support = Fraction(overlap, c_size), Fraction(overlap, cand.shingle_count)
        # Positional, not dataclasses.replace: that costs about 7% of a selection.
        scored.append(
            Candidate(cand.name, cand.state, cand.token_count, cand.shingle_count, overlap, coverage, support, score)
        )

    top = max(scores.values())
    tie_pool = tuple(name for name in active if top - scores[name] <= TIE_MARGIN)
    if len(tie_pool) == 1:
        winner, reason = tie_pool[0], Reason.CONSENSUS_TOP_SCORE
    else:
        fewest = min(counts[name] for name in tie_pool)
        at_fewest = [name for name in tie_pool if counts[name] == fewest]
        if len(at_fewest) == 1:
            winner, reason = at_fewest[0], Reason.CONSENSUS_TIE_FEWEST_SHINGLES
        else:
            winner, reason = _by_priority(at_fewest), Reason.CONSENSUS_TIE_PRIORITY
    return Selection(index, winner, reason, pool, c_size, tie_pool, tuple(scored))
