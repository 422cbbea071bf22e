"""Every decision can be recomputed from its explanation alone.

``replay`` below is an independent re-implementation of the decision part of the
rule (steps 3 to 7 of issue 2) that reads nothing but the JSON form of an
explanation (``Selection.to_dict()``, as ``--report`` writes it): candidate
states, shingle counts, overlaps, exact scores as ``"n/d"`` strings, the consensus
size, the tie pool, the pool and the reason. It uses ``fractions.Fraction`` and
no function of ``selection_core``. It checks that the explanation is internally
consistent and that it leads to exactly the decision it reports.

It runs on the real batch ``tests/data/aeb_batch_extracted.json`` (through the
real command with ``--report``), on hand-built articles covering every reason
code, and on Hypothesis-generated articles.
"""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection_cli.main import main
from selection_core import select_article
from tests import support
from tests.support import examples

# The rule's constants, restated from the issue (not imported: this is a replay).
EXTRACTORS = ("trafilatura", "newspaper4k", "readability")
PRIORITY = ("newspaper4k", "readability", "trafilatura")
TEXT_FIELD = {"trafilatura": "text", "newspaper4k": "text", "readability": "cleaned_text"}
MARGIN = Fraction(3, 100)
FALLBACK = "newspaper4k"
SHINGLE = 5
STATES = ("usable", "degraded", "unavailable")

DATA = support.DATA / "aeb_batch_extracted.json"

HYPOTHESIS = settings(
    max_examples=examples(300),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_FRACTION = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")


def exact(text: Any) -> Fraction:
    """An exact value as written in an explanation: ``"n/d"`` in lowest terms."""
    assert isinstance(text, str), text
    m = _FRACTION.fullmatch(text)
    assert m, f"not an 'n/d' fraction: {text!r}"
    num, den = int(m.group(1)), int(m.group(2))
    assert math.gcd(num, den) == 1, f"not in lowest terms: {text!r}"
    return Fraction(num, den)


def by_priority(names: list[str]) -> str:
    return min(names, key=PRIORITY.index)


def replay(expl: dict[str, Any], index: int | None = None) -> None:
    """Assert that ``expl`` is consistent and decides what it says it decides."""
    if index is not None:
        assert expl["index"] == index
    cands = expl["candidates"]
    assert [c["name"] for c in cands] == list(EXTRACTORS)
    score_keys = ("overlap", "coverage", "support", "score", "coverage_float", "support_float", "score_float")

    for c in cands:
        assert c["state"] in STATES
        n_tok, n_sh = c["token_count"], c["shingle_count"]
        assert type(n_tok) is int and type(n_sh) is int
        if c["state"] == "unavailable":
            assert (n_tok, n_sh) == (0, 0)
        else:
            # k tokens give at most k - 4 distinct windows, and 1-4 tokens one shingle.
            assert n_tok >= 1 and 1 <= n_sh <= max(1, n_tok - (SHINGLE - 1))

    usable = [c["name"] for c in cands if c["state"] == "usable"]
    degraded = [c["name"] for c in cands if c["state"] == "degraded"]
    active, pool = (usable, "usable") if usable else (degraded, "degraded") if degraded else ([], "none")
    assert expl["pool"] == pool
    counts = {c["name"]: c["shingle_count"] for c in cands}
    c_size = expl["consensus_size"]

    def no_scores(names: list[str]) -> None:
        for c in cands:
            if c["name"] in names:
                assert all(c[k] is None for k in score_keys), c

    if not active:
        expected = (FALLBACK, "all_unavailable", [], None)
        no_scores(list(EXTRACTORS))
    elif len(active) == 1:
        expected = (active[0], "single_candidate", active, None)
        no_scores(list(EXTRACTORS))
    else:
        assert type(c_size) is int and c_size >= 0
        if c_size == 0:
            # Zero consensus: the median (3 active) or the maximum (2 active) count.
            values = sorted(counts[n] for n in active)
            target = values[1] if len(active) == 3 else values[-1]
            at_target = [n for n in active if counts[n] == target]
            reason = "no_consensus_median" if len(active) == 3 else "no_consensus_largest"
            expected = (by_priority(at_target), reason, at_target, 0)
            no_scores(list(EXTRACTORS))
        else:
            scores: dict[str, Fraction] = {}
            overlaps = []
            for c in cands:
                if c["name"] not in active:
                    no_scores([c["name"]])
                    continue
                o, s = c["overlap"], c["shingle_count"]
                assert type(o) is int and 0 <= o <= min(c_size, s)
                overlaps.append(o)
                assert exact(c["coverage"]) == Fraction(o, c_size)
                assert exact(c["support"]) == Fraction(o, s)
                score = exact(c["score"])
                # F1 of coverage and support, = 2|S∩C| / (|C| + |S|).
                assert score == Fraction(2 * o, c_size + s)
                if o:
                    cov, sup = Fraction(o, c_size), Fraction(o, s)
                    assert score == 2 * cov * sup / (cov + sup)
                for key in ("coverage", "support", "score"):
                    assert c[f"{key}_float"] == round(float(exact(c[key])), 6)
                scores[c["name"]] = score
            # Each consensus shingle is in at least two active sets and in at most all.
            assert 2 * c_size <= sum(overlaps) <= len(active) * c_size
            if len(active) == 2:
                assert overlaps == [c_size, c_size]  # C is the intersection
            top = max(scores.values())
            tie_pool = [n for n in active if top - scores[n] <= MARGIN]
            if len(tie_pool) == 1:
                winner, reason = tie_pool[0], "consensus_top_score"
            else:
                fewest = min(counts[n] for n in tie_pool)
                at_fewest = [n for n in tie_pool if counts[n] == fewest]
                if len(at_fewest) == 1:
                    winner, reason = at_fewest[0], "consensus_tie_fewest_shingles"
                else:
                    winner, reason = by_priority(at_fewest), "consensus_tie_priority"
            expected = (winner, reason, tie_pool, c_size)

    actual = (expl["selected_extractor"], expl["reason"], expl["tie_pool"], c_size)
    assert actual == expected, f"explanation {expl} replays to {expected}"
    assert expl["selected_extractor"] in EXTRACTORS


def explanation(article: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """The JSON form of the core's explanation, through a JSON round trip."""
    out = orjson.loads(orjson.dumps(select_article(article, index).to_dict()))
    assert isinstance(out, dict)
    return out


# --------------------------------------------------------------------------- real batch


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The real batch run through the command, with its JSON Lines report."""
    if not DATA.exists():
        pytest.fail(f"{DATA} is missing; regenerate it with scripts/build_aeb_batch.py")
    work = tmp_path_factory.mktemp("aeb")
    out, report = work / "out.json", work / "report.jsonl"
    assert main(["select", str(DATA), "--output", str(out), "--report", str(report)]) == 0
    lines = report.read_bytes().splitlines()
    return [orjson.loads(line) for line in lines], orjson.loads(out.read_bytes())


def test_real_batch_every_decision_replays_from_its_report_line(
    real_report: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    report, output = real_report
    articles = output["articles"]
    assert len(report) == len(articles) == 181
    failures = []
    for i, (expl, art) in enumerate(zip(report, articles, strict=True)):
        try:
            replay(expl, i)
            assert art["selected_extractor"] == expl["selected_extractor"]
        except AssertionError as exc:
            failures.append(f"article {i} ({art.get('id')}): {exc}")
    assert not failures, "\n".join(failures[:5])
    # The real data exercises the consensus rules, not only priority.
    reasons = {e["reason"] for e in report}
    assert {"consensus_top_score", "consensus_tie_fewest_shingles", "consensus_tie_priority"} <= reasons


def test_real_batch_counts_match_the_core_on_each_article(
    real_report: tuple[list[dict[str, Any]], dict[str, Any]],
) -> None:
    # The report describes the article it is about (not merely a consistent story).
    # Each line is the explanation with the article's id and url after the index, to join it to the batch.
    report, output = real_report
    for i in (0, 1, 17, 90, 180):
        article = output["articles"][i]
        expected = explanation(article, i)
        joined = {"index": expected.pop("index"), "id": article["id"], "url": article["url"], **expected}
        assert list(report[i]) == list(joined)
        assert report[i] == joined


# --------------------------------------------------------------------------- every reason

W = " ".join(f"w{i}" for i in range(30))
V = " ".join(f"v{i}" for i in range(20))
EVERY_REASON = {
    "consensus_top_score": {"trafilatura": {"text": W}, "newspaper4k": {"text": W + " extra words here now"}},
    "consensus_tie_fewest_shingles": {"trafilatura": {"text": W}, "newspaper4k": {"text": W + " x"}},
    "consensus_tie_priority": {"trafilatura": {"text": W}, "readability": {"cleaned_text": W}},
    "no_consensus_median": {
        "trafilatura": {"text": W},
        "newspaper4k": {"text": V},
        "readability": {"cleaned_text": "a b"},
    },
    "no_consensus_largest": {"trafilatura": {"text": W, "error": "e"}, "newspaper4k": {"text": V, "error": 1}},
    "single_candidate": {"readability": {"cleaned_text": "one"}, "newspaper4k": {"text": W, "error": "e"}},
    "all_unavailable": {"newspaper4k": {"text": "", "error": "e"}},
}


@pytest.mark.parametrize("reason", list(EVERY_REASON))
def test_every_reason_code_replays(reason: str) -> None:
    expl = explanation(EVERY_REASON[reason])
    assert expl["reason"] == reason
    replay(expl)


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda e: e.update(selected_extractor="readability"), id="selected"),
        pytest.param(lambda e: e.update(reason="consensus_tie_priority"), id="reason"),
        pytest.param(lambda e: e.update(pool="degraded"), id="pool"),
        pytest.param(lambda e: e.update(tie_pool=["newspaper4k"]), id="tie-pool"),
        pytest.param(lambda e: e.update(consensus_size=e["consensus_size"] + 1), id="consensus-size"),
        pytest.param(lambda e: e["candidates"][1].update(score="1/1"), id="score-not-lowest-terms"),
        pytest.param(lambda e: e["candidates"][1].update(shingle_count=29), id="shingle-count"),
        pytest.param(lambda e: e["candidates"][0].update(state="degraded"), id="state"),
    ],
)
def test_replay_rejects_a_tampered_explanation(tamper: Any) -> None:
    # The checker itself must be able to fail: a replay that accepts anything
    # would prove nothing.
    expl = explanation(EVERY_REASON["consensus_top_score"])
    replay(expl)
    tamper(expl)
    with pytest.raises(AssertionError):
        replay(expl)


# --------------------------------------------------------------------------- generated articles

VOCAB = ["alpha", "beta", "gamma", "delta", "Épsilon", "zeta", "ETA", "θήτα", "iota", "42", "東京", "naïve"]
SEPARATORS = [" ", " ", " ", "\n", ", ", ". ", " — ", "\n\n", "&nbsp;", " <b>", "</p>\n<p>", " “", "” "]
ERRORS = [None, False, "", "  ", "timeout", 0, {}, [], True, {"code": 500}]
KINDS = ["most"] * 6 + ["near"] * 3 + ["slice"] * 2 + ["junk", "short", "empty", "not-a-string"]
SHAPES = ["block"] * 14 + ["missing", "not-object"]


def text_from(rnd: random.Random, base: list[str]) -> Any:
    """A text for one block: a slice of the shared base with optional noise, or junk."""
    kind = rnd.choice(KINDS)
    if kind == "not-a-string":
        return rnd.choice([None, 0, 1.5, ["a b c"], {"t": "x"}, True])
    if kind == "empty":
        return rnd.choice(["", " ", "\n", "!!!", "<br/>", "&amp;"])
    if kind == "junk":
        tokens = rnd.choices(VOCAB, k=rnd.randint(0, 30))
    elif kind == "short":
        tokens = rnd.choices(VOCAB, k=rnd.randint(1, 4))
    else:
        n = len(base)
        if kind == "near":  # all of it, give or take a token at the end
            i, j = 0, n - rnd.randint(0, 1)
        elif kind == "slice":
            i = rnd.randint(0, n)
            j = rnd.randint(i, n)
        else:  # "most": most of the base, the usual case for real extractors
            i = rnd.randint(0, n // 5)
            j = rnd.randint(n - n // 5, n)
        tokens = base[i:j]
        if kind == "near":
            tokens = tokens + rnd.choices(VOCAB, k=rnd.randint(0, 2))
        elif rnd.random() < 0.3:  # drop a passage
            k = rnd.randint(0, len(tokens))
            del tokens[k : k + rnd.randint(1, 8)]
        if kind != "near" and rnd.random() < 0.3:
            tokens = rnd.choices(VOCAB, k=rnd.randint(1, 6)) + tokens
        if kind != "near" and rnd.random() < 0.3:
            tokens = tokens + rnd.choices(VOCAB, k=rnd.randint(1, 6))
    parts = []
    for tok in tokens:
        parts.append(tok.upper() if rnd.random() < 0.1 else tok)
        parts.append(rnd.choice(SEPARATORS))
    return "".join(parts)


@st.composite
def articles(draw: st.DrawFn) -> dict[str, Any]:
    """An article: three blocks (some missing, malformed or failed) over a shared text."""
    rnd = draw(st.randoms(use_true_random=True))
    base = rnd.choices(VOCAB, k=rnd.choice([0, 5, 10, 20, 40, 60, 100, 100]))
    art: dict[str, Any] = {"id": rnd.randint(0, 10**6)}
    names = list(EXTRACTORS)
    rnd.shuffle(names)
    all_failed = rnd.random() < 0.15  # then only degraded candidates can compete
    previous: Any = None
    for name in names:
        shape = rnd.choice(SHAPES)
        if shape == "missing":
            continue
        if shape == "not-object":
            art[name] = rnd.choice([None, "text", [1, 2], 3])
            continue
        # Sometimes reuse the previous text exactly (extractors often agree).
        text = previous if previous is not None and rnd.random() < 0.2 else text_from(rnd, base)
        previous = text
        block: dict[str, Any] = {TEXT_FIELD[name]: text}
        if all_failed:
            block["error"] = rnd.choice(["HTTP 500", 0, True, {"code": 1}])
        elif rnd.random() < 0.25:  # mostly no error field at all
            block["error"] = rnd.choice(ERRORS)
        art[name] = block
    return art


@HYPOTHESIS
@given(articles())
def test_generated_decisions_replay_from_their_explanation(article: dict[str, Any]) -> None:
    replay(explanation(article))


@settings(HYPOTHESIS, max_examples=examples(60))
@given(st.lists(articles(), min_size=1, max_size=8))
def test_generated_batch_report_replays_in_order(batch: list[dict[str, Any]]) -> None:
    for i, art in enumerate(batch):
        replay(explanation(art, i), i)
