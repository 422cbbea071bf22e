"""One article's decision in words (selection_cli.explain): every reason, the bars, the numbers."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selection_cli.explain import BAR_CELLS, bar, explain_text, reason_text
from selection_core import Reason, select_article
from tests.core.test_evidence import KINDS
from tests.core.test_rule_cases import article, words


@pytest.mark.parametrize(
    ("art", "reason", "words_in_why"),
    [
        pytest.param(KINDS["top-score"], Reason.CONSENSUS_TOP_SCORE, ["no other candidate is within 3/100"], id="top"),
        pytest.param(
            article(words("w", 100), words("w", 100) + " ja0", words("w", 100) + " jb0 jb1"),
            Reason.CONSENSUS_TIE_FEWEST_SHINGLES,
            ["within 3/100 of the top score (a tie)", "fewest shingles wins: trafilatura, with 96"],
            id="tie-fewest",
        ),
        pytest.param(
            KINDS["tie-priority"],
            Reason.CONSENSUS_TIE_PRIORITY,
            ["share the fewest shingles (26)", "priority newspaper4k > readability > trafilatura picks newspaper4k"],
            id="tie-priority",
        ),
        pytest.param(
            KINDS["no-consensus"],
            Reason.NO_CONSENSUS_MEDIAN,
            ["consensus is empty", "median shingle count wins: 26", "trafilatura, newspaper4k have that count"],
            id="median",
        ),
        pytest.param(
            article(words("a", 10), words("b", 20), None),
            Reason.NO_CONSENSUS_LARGEST,
            ["two active candidates the larger shingle count wins: 16"],
            id="largest",
        ),
        pytest.param(KINDS["single"], Reason.SINGLE_CANDIDATE, ["newspaper4k is the only active candidate"], id="one"),
        pytest.param(KINDS["none"], Reason.ALL_UNAVAILABLE, ["so newspaper4k is selected by default"], id="none"),
    ],
)
def test_every_reason_is_said_in_the_words_of_the_rule(art: dict[str, Any], reason: Reason, words_in_why: list[str]):
    selection = select_article(art, 3)
    assert selection.reason is reason
    why = reason_text(selection)
    for phrase in words_in_why:
        assert phrase in why
    text = explain_text({**art, "id": "x"}, selection, "b.json", 10)
    assert text.startswith("Article 3 of 10 in b.json\n  id   x\n")
    assert f"Selected: {selection.selected} ({reason.value})" in text
    assert f"Why: {why}" in text


def test_the_candidates_show_state_counts_coverage_support_and_score() -> None:
    art = {"url": "https://example.org/?a=1&b=2", **KINDS["top-score"]}
    selection = select_article(art)
    lines = explain_text(art, selection, "b.json").split("\n")
    assert lines[0] == "Article 0 in b.json"
    assert lines[1] == "  url  https://example.org/?a=1&b=2"  # whole, unescaped
    consensus = selection.consensus_size
    assert f"Consensus: {consensus} shingles are in at least two active candidates." in lines
    for candidate in selection.candidates:
        (head,) = [i for i, line in enumerate(lines) if line.startswith(f"  {candidate.name} ")]
        counts = f"{candidate.token_count} tokens, {candidate.shingle_count} shingles"
        assert f"{candidate.state.value}, {counts}" in lines[head]
        assert lines[head + 3] == f"    score    {float(candidate.score):.4f}  {bar(candidate.score)}"
        assert lines[head + 1].startswith(f"    coverage {float(candidate.coverage):.4f}")
    assert "<- selected" in next(line for line in lines if line.startswith("  newspaper4k"))


def test_a_degraded_pool_is_named() -> None:
    text = explain_text({}, select_article(KINDS["degraded"]), "b.json")
    assert "no candidate is usable, so the degraded ones (text, but an error reported): trafilatura, newspaper4k" in (
        text
    )
    assert "Tie pool: trafilatura, newspaper4k" in text


@pytest.mark.parametrize(
    ("value", "cells", "drawn"),
    [
        pytest.param(None, 4, "", id="none"),
        pytest.param(Fraction(0), 4, "", id="zero"),
        pytest.param(Fraction(1), 4, "████", id="one"),
        pytest.param(Fraction(1, 32), 4, "▏", id="an-eighth-of-a-cell"),
        pytest.param(Fraction(1, 33), 4, "", id="less-than-an-eighth"),
        pytest.param(Fraction(3, 8), 4, "█▌", id="one-and-a-half"),
    ],
)
def test_bars(value: Fraction | None, cells: int, drawn: str) -> None:
    assert bar(value, cells) == drawn


@given(st.fractions(min_value=0, max_value=1))
def test_a_bar_grows_with_its_value_and_fits(value: Fraction) -> None:
    drawn = bar(value)
    assert len(drawn) <= BAR_CELLS
    eighths = 8 * drawn.count("█") + sum(" ▏▎▍▌▋▊▉".index(c) for c in drawn if c != "█")
    assert eighths == int(value * BAR_CELLS * 8)
