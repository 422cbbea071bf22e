"""A deliberately slow, straightforward implementation of the selection rule.

Written from the text of issue 2 / docs/rule.md without any shortcut, so that
the core's fast paths can be checked against it (tests/core/test_properties.py with
Hypothesis, tests/core/test_golden.py on the 181 real articles).
"""

from __future__ import annotations

import html
import re
import unicodedata
from fractions import Fraction
from typing import Any

import ftfy
import regex

from selection_core import select_article

EXTRACTORS = ("trafilatura", "newspaper4k", "readability")
TEXT_FIELD = {"trafilatura": "text", "newspaper4k": "text", "readability": "cleaned_text"}


_REF_MD_IMAGE = r"!\[[^\]]*\]\([^)]*\)"
_REF_MD_LINK = r"\[([^\]]*)\]\([^)]*\)"
_REF_COMMENT = r"<!--.*?-->"
_REF_TAG = r"</?[A-Za-z][^<>]*>"
_REF_TOKEN = r"[\p{L}\p{N}]+"


def ref_tokens(text: str) -> list[str]:
    """Issue 2, rule step 1, exactly as written, without any shortcut."""
    text = html.unescape(text)
    text = ftfy.fix_encoding(text)
    text = re.sub(_REF_MD_IMAGE, " ", text)
    text = re.sub(_REF_MD_LINK, r"\1", text)
    text = re.sub(_REF_COMMENT, " ", text, flags=re.DOTALL)
    text = re.sub(_REF_TAG, " ", text)
    text = unicodedata.normalize("NFKC", text)
    text = text.lower()
    return regex.findall(_REF_TOKEN, text)


def ref_shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    if not tokens:
        return set()
    if len(tokens) < 5:
        return {tuple(tokens)}
    return {tuple(tokens[i : i + 5]) for i in range(len(tokens) - 4)}


def ref_error_present(block: dict[str, Any]) -> bool:
    if "error" not in block:
        return False
    value = block["error"]
    if value is None or value is False:
        return False
    if isinstance(value, str) and value.strip() == "":
        return False
    return True


def ref_select(article: dict[str, Any]) -> dict[str, Any]:
    """The whole rule (steps 1-7), straightforwardly, with Fraction."""
    info: dict[str, dict[str, Any]] = {}
    sets: dict[str, set[tuple[str, ...]]] = {}
    for name in EXTRACTORS:
        block = article.get(name)
        text = block.get(TEXT_FIELD[name]) if isinstance(block, dict) else None
        tokens = ref_tokens(text) if isinstance(text, str) else []
        if not tokens:
            info[name] = {"state": "unavailable", "token_count": 0, "shingle_count": 0}
            continue
        assert isinstance(block, dict)
        sets[name] = ref_shingles(tokens)
        state = "degraded" if ref_error_present(block) else "usable"
        info[name] = {"state": state, "token_count": len(tokens), "shingle_count": len(sets[name])}

    usable = [n for n in EXTRACTORS if info[n]["state"] == "usable"]
    degraded = [n for n in EXTRACTORS if info[n]["state"] == "degraded"]
    active, pool = (usable, "usable") if usable else (degraded, "degraded") if degraded else ([], "none")
    priority = ["newspaper4k", "readability", "trafilatura"]
    first = lambda names: sorted(names, key=priority.index)[0]  # noqa: E731
    out: dict[str, Any] = {"candidates": info, "pool": pool, "scores": {}, "consensus_size": None}
    if not active:
        return {**out, "selected": "newspaper4k", "reason": "all_unavailable"}
    if len(active) == 1:
        return {**out, "selected": active[0], "reason": "single_candidate"}
    votes: dict[tuple[str, ...], int] = {}
    for n in active:
        for sh in sets[n]:
            votes[sh] = votes.get(sh, 0) + 1
    consensus = {sh for sh, v in votes.items() if v >= 2}
    out["consensus_size"] = len(consensus)
    count = {n: info[n]["shingle_count"] for n in active}
    if not consensus:
        values = sorted(count.values())
        target = values[1] if len(active) == 3 else values[-1]
        reason = "no_consensus_median" if len(active) == 3 else "no_consensus_largest"
        return {**out, "selected": first([n for n in active if count[n] == target]), "reason": reason}
    scores = {}
    for n in active:
        inter = len(sets[n] & consensus)
        coverage, support = Fraction(inter, len(consensus)), Fraction(inter, len(sets[n]))
        scores[n] = Fraction(0) if inter == 0 else 2 * coverage * support / (coverage + support)
    out["scores"] = scores
    top = max(scores.values())
    tied = [n for n in active if top - scores[n] <= Fraction(3, 100)]
    if len(tied) == 1:
        return {**out, "selected": tied[0], "reason": "consensus_top_score"}
    fewest = min(count[n] for n in tied)
    concise = [n for n in tied if count[n] == fewest]
    if len(concise) == 1:
        return {**out, "selected": concise[0], "reason": "consensus_tie_fewest_shingles"}
    return {**out, "selected": first(concise), "reason": "consensus_tie_priority"}


def assert_agrees_with_reference(article: dict[str, Any]) -> None:
    ref = ref_select(article)
    sel = select_article(article)
    for cand in sel.candidates:
        expected = ref["candidates"][cand.name]
        actual = {"state": cand.state.value, "token_count": cand.token_count, "shingle_count": cand.shingle_count}
        assert actual == expected, (cand.name, article)
        assert cand.score == ref["scores"].get(cand.name), (cand.name, article)
    assert sel.consensus_size == ref["consensus_size"]
    assert (sel.selected, sel.reason.value, sel.pool.value) == (ref["selected"], ref["reason"], ref["pool"])
