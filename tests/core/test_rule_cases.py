"""The mandatory named cases CT-001 to CT-014 of issue 2.

Every article here is built by hand so that it exercises exactly the rule its
case names. Texts are mostly made of distinct tokens (``w0 w1 w2 ...``) so that
shingle counts can be derived on paper: a run of ``k >= 5`` distinct tokens has
``k - 4`` shingles, all distinct. Each row's comment derives the expected winner
from the rule; the tests then assert the selected extractor, the reason code and
the pool (and the consensus size or tie pool where that is what the case is about).

CT-008 to CT-011 run the real command, ``selection_cli.main.main``, on files in
``tmp_path``.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import orjson
import pytest

from selection_cli.main import main
from selection_core import (
    EXIT_INVALID_INPUT,
    Pool,
    Reason,
    State,
    error_present,
    select_article,
    shingles,
    tokenize,
)

T, N, R = "trafilatura", "newspaper4k", "readability"
FIELD = {T: "text", N: "text", R: "cleaned_text"}


def words(prefix: str, count: int, start: int = 0) -> str:
    """``count`` distinct tokens ``prefix<start> ... prefix<start+count-1>``."""
    return " ".join(f"{prefix}{i}" for i in range(start, start + count))


def article(
    trafilatura: str | None = None,
    newspaper4k: str | None = None,
    readability: str | None = None,
    errors: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An article with a block for every extractor whose text is given (None: no block)."""
    texts = {T: trafilatura, N: newspaper4k, R: readability}
    out: dict[str, Any] = {"id": "a1"}
    for name, text in texts.items():
        if text is not None:
            out[name] = {FIELD[name]: text, "error": (errors or {}).get(name)}
    return out


def assert_decision(art: dict[str, Any], selected: str, reason: Reason, pool: Pool) -> Any:
    sel = select_article(art)
    assert (sel.selected, sel.reason, sel.pool) == (selected, reason, pool), sel.to_dict()
    assert sel.to_dict()["selected_extractor"] == selected
    return sel


BODY = (
    "The city council voted on Tuesday to extend the tram line to the northern suburbs, "
    "a project that residents have awaited for more than a decade. The new section will "
    "add seven stops and is expected to carry twelve thousand passengers a day once it "
    "opens in the spring of next year, according to the transport department."
)
NAV = "Home News Sport Business Weather Login Subscribe Menu Search Newsletters Podcasts Video"
FOOTER = "Share on Facebook Share on Twitter Copy link Cookie settings Privacy policy Contact us"


# --------------------------------------------------------------------------- CT-001

CT_001 = [
    pytest.param(
        # T = w0..w29 (26 shingles), N = T + 10 junk tokens (36 shingles: T's 26 + 10),
        # R = w0..w19 (16 shingles, all in T). C = T's 26 (each in T and N; R's are too).
        # F1: T = 52/52 = 1, N = 52/62 ~ 0.84, R = 32/42 ~ 0.76. Only T within 0.03 of 1.
        article(words("w", 30), words("w", 30) + " " + words("junk", 10), words("w", 20)),
        T,
        Reason.CONSENSUS_TOP_SCORE,
        26,
        id="three-agree-highest-f1-wins",
    ),
    pytest.param(
        # N shares nothing. T = w0..w29 (26), R = w0..w24 (21, all in T). C = R's 21.
        # F1: R = 42/42 = 1, T = 42/47 ~ 0.89, N = 0. R alone at the top.
        article(words("w", 30), words("other", 30), words("w", 25)),
        R,
        Reason.CONSENSUS_TOP_SCORE,
        21,
        id="two-agree-third-unrelated-highest-f1-wins",
    ),
    pytest.param(
        # T = w0..w99 (96 shingles) exactly the consensus; N and R add 6 junk tokens
        # each (102 shingles, junk differs so C = the 96). F1: T = 1, N = R = 192/198 =
        # 32/33; 1 - 32/33 = 1/33 > 3/100: only T is in the tie pool.
        article(words("w", 100), words("w", 100) + " " + words("ja", 6), words("w", 100) + " " + words("jb", 6)),
        T,
        Reason.CONSENSUS_TOP_SCORE,
        96,
        id="just-outside-margin-top-wins",
    ),
    pytest.param(
        # T = N = w0..w106 (103 shingles), R = w0..w100 (97 shingles, all in T and N).
        # C = 103. F1: T = N = 1, R = 194/200 = 97/100: exactly 3/100 below the top,
        # inclusive, so all three tie; R has the fewest shingles (97) and wins.
        article(words("w", 107), words("w", 107), words("w", 101)),
        R,
        Reason.CONSENSUS_TIE_FEWEST_SHINGLES,
        103,
        id="more-concise-at-exact-margin-wins",
    ),
    pytest.param(
        # T = w0..w99 (96), N = T + 1 junk (97), R = T + 2 junk (98); C = 96.
        # F1: T = 1, N = 192/193, R = 192/194: all within 0.03, T has fewest shingles.
        article(words("w", 100), words("w", 100) + " ja0", words("w", 100) + " jb0 jb1"),
        T,
        Reason.CONSENSUS_TIE_FEWEST_SHINGLES,
        96,
        id="three-agree-concise-and-top",
    ),
]


@pytest.mark.parametrize("art, selected, reason, consensus", CT_001)
def test_ct_001_three_usable_highest_f1_or_concise_within_margin(
    art: dict[str, Any], selected: str, reason: Reason, consensus: int
) -> None:
    sel = assert_decision(art, selected, reason, Pool.USABLE)
    assert sel.consensus_size == consensus


def test_ct_001_margin_is_inclusive_exactly_three_hundredths() -> None:
    # Guards the boundary row above with exact arithmetic: the gap is exactly 3/100.
    sel = select_article(article(words("w", 107), words("w", 107), words("w", 101)))
    assert sel.candidate(N).score == 1
    assert sel.candidate(R).score == Fraction(97, 100)
    assert sel.tie_pool == (T, N, R)


# --------------------------------------------------------------------------- CT-002

CT_002 = [
    # The body has no repeated 5-gram. The clean copies hold exactly the consensus
    # (their shingles are the body's, all shared): F1 = 1. The polluted copy has the
    # same shared shingles plus 26 boilerplate shingles (F1 = 106/132 = 53/66; with the
    # footer alone, 14 more: 53/60): well under 0.97. The two
    # clean copies tie on score and count, so priority picks among them.
    pytest.param(article(NAV + " " + BODY + " " + FOOTER, BODY, BODY), N, id="trafilatura-polluted"),
    pytest.param(article(BODY, NAV + " " + BODY + " " + FOOTER, BODY), R, id="newspaper4k-polluted"),
    pytest.param(article(BODY, BODY, NAV + " " + BODY + " " + FOOTER), N, id="readability-polluted"),
    pytest.param(article(BODY, BODY, BODY + " " + FOOTER), N, id="readability-footer-only"),
]


@pytest.mark.parametrize("art, selected", CT_002)
def test_ct_002_boilerplate_loses_to_clean_agreeing_texts(art: dict[str, Any], selected: str) -> None:
    sel = assert_decision(art, selected, Reason.CONSENSUS_TIE_PRIORITY, Pool.USABLE)
    polluted = next(name for name in (T, N, R) if name not in sel.tie_pool)
    assert sel.candidate(polluted).score < sel.candidate(selected).score - Fraction(3, 100)
    assert sel.candidate(selected).score == 1


# --------------------------------------------------------------------------- CT-003

SNIPPET = "The city council voted on Tuesday to extend the tram line."

CT_003 = [
    # The two complete copies hold the consensus (F1 = 1, same count: priority among
    # them). The 11-token snippet's 7 shingles are all in C (|C| = 53) but cover a
    # small part of it: F1 = 14/(53 + 7) = 7/30, far below 0.97.
    pytest.param(article(BODY, SNIPPET, BODY), R, id="snippet-in-newspaper4k"),
    pytest.param(article(SNIPPET, BODY, BODY), N, id="snippet-in-trafilatura"),
    pytest.param(article(BODY, BODY, SNIPPET), N, id="snippet-in-readability"),
    # A 2-token teaser is one shingle ("breaking", "news") outside C: F1 = 0.
    pytest.param(article(BODY, "Breaking news", BODY), R, id="two-token-teaser"),
]


@pytest.mark.parametrize("art, selected", CT_003)
def test_ct_003_short_snippet_loses_to_two_complete_texts(art: dict[str, Any], selected: str) -> None:
    sel = assert_decision(art, selected, Reason.CONSENSUS_TIE_PRIORITY, Pool.USABLE)
    snippet = next(name for name in (T, N, R) if name not in sel.tie_pool)
    assert sel.candidate(snippet).shingle_count < sel.candidate(selected).shingle_count
    assert sel.candidate(snippet).score is not None and sel.candidate(snippet).score < Fraction(1, 2)


# --------------------------------------------------------------------------- CT-004

CT_004 = [
    # Disjoint vocabularies: C is empty. Counts T = 16, N = 26, R = 4: median 16 -> T.
    pytest.param(article(words("a", 20), words("b", 30), words("c", 8)), T, (T,), id="median-is-trafilatura"),
    # Counts T = 6, N = 16, R = 26: median 16 -> N.
    pytest.param(article(words("a", 10), words("b", 20), words("c", 30)), N, (N,), id="median-is-newspaper4k"),
    # Counts T = 16, N = 26, R = 16: sorted 16, 16, 26, median 16 held by T and R:
    # priority readability > trafilatura.
    pytest.param(article(words("a", 20), words("b", 30), words("c", 20)), R, (T, R), id="median-shared-priority"),
    # Same words in three orders (forward, backward, stride 7): no 5-gram in common.
    # Counts 16, 16, 16: all at the median, priority -> newspaper4k.
    pytest.param(
        article(
            words("w", 20),
            " ".join(f"w{i}" for i in reversed(range(20))),
            " ".join(f"w{(i * 7) % 20}" for i in range(20)),
        ),
        N,
        (T, N, R),
        id="same-words-no-common-5-gram",
    ),
]


@pytest.mark.parametrize("art, selected, tie_pool", CT_004)
def test_ct_004_three_active_zero_consensus_median_count_wins(
    art: dict[str, Any], selected: str, tie_pool: tuple[str, ...]
) -> None:
    sel = assert_decision(art, selected, Reason.NO_CONSENSUS_MEDIAN, Pool.USABLE)
    assert sel.consensus_size == 0
    assert sel.tie_pool == tie_pool


# --------------------------------------------------------------------------- CT-005

CT_005 = [
    # T missing; N = 6 shingles, R = 16, disjoint: the larger, R.
    pytest.param(article(None, words("b", 10), words("c", 20)), R, (R,), Pool.USABLE, id="readability-larger"),
    # R missing; T = 26 > N = 6: T wins although it has the lowest priority.
    pytest.param(article(words("a", 30), words("b", 10), None), T, (T,), Pool.USABLE, id="trafilatura-larger"),
    # Equal counts (16, 16): priority newspaper4k > trafilatura.
    pytest.param(article(words("a", 20), words("b", 20), None), N, (T, N), Pool.USABLE, id="equal-counts-priority"),
    # N is degraded (an error) with the largest text: not active while two are usable.
    # Active T (6) and R (11): R.
    pytest.param(
        article(words("a", 10), words("b", 50), words("c", 15), errors={N: "timeout"}),
        R,
        (R,),
        Pool.USABLE,
        id="degraded-third-ignored",
    ),
    # Two degraded, one unavailable (empty text): T (26) > R (6).
    pytest.param(
        article(words("a", 30), "", words("c", 10), errors={T: "HTTP 500", R: "parse error"}),
        T,
        (T,),
        Pool.DEGRADED,
        id="two-degraded",
    ),
]


@pytest.mark.parametrize("art, selected, tie_pool, pool", CT_005)
def test_ct_005_two_active_zero_consensus_largest_count_wins(
    art: dict[str, Any], selected: str, tie_pool: tuple[str, ...], pool: Pool
) -> None:
    sel = assert_decision(art, selected, Reason.NO_CONSENSUS_LARGEST, pool)
    assert sel.consensus_size == 0
    assert sel.tie_pool == tie_pool


# --------------------------------------------------------------------------- CT-006

CT_006 = [
    # All three degraded: compared as usual among themselves. T and N hold the body
    # (F1 = 1), R adds boilerplate: tie T/N, priority -> N.
    pytest.param(
        article(BODY, BODY, NAV + " " + BODY, errors={T: "x", N: "x", R: "x"}),
        N,
        Reason.CONSENSUS_TIE_PRIORITY,
        id="three-degraded-consensus",
    ),
    # R has no tokens (unavailable, error or not); T and N degraded. T = body,
    # N = body + footer: T wins on score.
    pytest.param(
        article(BODY, BODY + " " + FOOTER, "  ", errors={T: "partial", N: {"code": 1}}),
        T,
        Reason.CONSENSUS_TOP_SCORE,
        id="two-degraded-one-empty",
    ),
    # Only R has text, and it is degraded: the single active candidate.
    pytest.param(
        article("", None, BODY, errors={R: True, T: "failed"}),
        R,
        Reason.SINGLE_CANDIDATE,
        id="single-degraded",
    ),
]


@pytest.mark.parametrize("art, selected, reason", CT_006)
def test_ct_006_only_degraded_are_evaluated(art: dict[str, Any], selected: str, reason: Reason) -> None:
    sel = assert_decision(art, selected, reason, Pool.DEGRADED)
    assert all(c.state is not State.USABLE for c in sel.candidates)
    assert sel.candidate(selected).state is State.DEGRADED


def test_ct_006_usable_candidate_beats_better_degraded_ones() -> None:
    # T is usable (a snippet); N and R are degraded but agree on the full body. The
    # degraded ones are not evaluated at all: T is the single active candidate.
    art = article(SNIPPET, BODY, BODY, errors={N: "timeout", R: "timeout"})
    sel = assert_decision(art, T, Reason.SINGLE_CANDIDATE, Pool.USABLE)
    assert sel.consensus_size is None
    assert sel.candidate(N).score is None and sel.candidate(R).score is None


# --------------------------------------------------------------------------- CT-007

CT_007 = [
    pytest.param({}, id="no-blocks"),
    pytest.param({"id": 1, "url": "https://x"}, id="user-fields-only"),
    pytest.param(article("", "", ""), id="three-empty"),
    pytest.param(article("   \n\t", "…— !!! ,,,", "\u00a0\u2003"), id="whitespace-and-punctuation"),
    pytest.param(article("<p></p><!-- ad -->", "![logo](x.png)", "&nbsp;&mdash;"), id="markup-only"),
    pytest.param(
        {T: {"text": None, "error": "HTTP 404"}, N: {"error": "timeout"}, R: {"cleaned_text": "", "error": "x"}},
        id="all-failed",
    ),
    pytest.param({T: None, N: "text", R: ["cleaned_text"]}, id="blocks-not-objects"),
    pytest.param(
        {T: {"text": 1}, N: {"text": ["a b"]}, R: {"text": "right text, wrong field"}}, id="non-string-fields"
    ),
]


@pytest.mark.parametrize("art", CT_007)
def test_ct_007_all_failed_or_empty_selects_newspaper4k(art: dict[str, Any]) -> None:
    # No usable and no degraded candidate: no comparison at all, the fallback.
    sel = assert_decision(art, N, Reason.ALL_UNAVAILABLE, Pool.NONE)
    assert all(c.state is State.UNAVAILABLE for c in sel.candidates)
    assert sel.tie_pool == () and sel.consensus_size is None


# --------------------------------------------------------------------------- CLI helpers


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def items_deep(value: Any) -> Any:
    """A comparable form that keeps key order and the int/float/bool distinction."""
    if isinstance(value, dict):
        return ("object", [(k, items_deep(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("array", [items_deep(v) for v in value])
    return (type(value).__name__, repr(value))


def expected_output(doc: dict[str, Any]) -> bytes:
    """What the command must write for ``doc``: each article's decision set in place
    (or appended), everything else untouched, serialized as the issue specifies."""
    expected = json.loads(json.dumps(doc))
    for art in expected["articles"]:
        art["selected_extractor"] = select_article(art).selected
    return orjson.dumps(expected, option=orjson.OPT_INDENT_2) + b"\n"


# --------------------------------------------------------------------------- CT-008


def test_ct_008_n_in_n_out_same_order_fields_kept_default_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "batch": "2024-05-01",
        "articles": [
            {
                "id": "z",
                "url": "https://example.org/é",
                "tags": ["a", {"deep": [1, 2.5, None, True]}],
                "trafilatura": {"text": BODY, "error": None, "meta": {"x": 1}},
                "newspaper4k": {"text": BODY + " " + FOOTER, "authors": ["Ana", "Bo"]},
                "readability": {"cleaned_text": BODY, "title": "Tram"},
            },
            {"id": "a", "notes": "only user data"},
            {"newspaper4k": {"text": "Breaking news"}, "id": "m", "score": 18446744073709551615},
            {
                "readability": {"cleaned_text": words("c", 30)},
                "trafilatura": {"text": words("a", 20)},
                "id": "b",
                "empty": {},
                "nothing": None,
            },
            {"id": "q", "trafilatura": {"text": "日本語のテキスト 東京 2024"}, "lang": "ja"},
        ],
        "zzz": {"kept": "last"},
    }
    inp = tmp_path / "batch_extracted.json"
    # Written compactly and with non-ASCII escaped: the output is re-serialized anyway.
    original = json.dumps(doc, ensure_ascii=True).encode()
    inp.write_bytes(original)

    code, out, err = run_cli(["select", str(inp)], capsys)

    assert code == 0, err
    assert err == ""
    target = tmp_path / "batch_extracted_selected.json"
    assert listing(tmp_path) == ["batch_extracted.json", "batch_extracted_selected.json"]
    assert inp.read_bytes() == original
    written = target.read_bytes()
    assert written == expected_output(doc)
    assert "日本語".encode() in written and written.endswith(b"}\n")  # UTF-8, not \u-escaped

    result = orjson.loads(written)
    assert list(result) == list(doc)
    assert len(result["articles"]) == len(doc["articles"])
    for before, after in zip(doc["articles"], result["articles"], strict=True):
        assert list(after)[-1] == "selected_extractor"
        kept = {k: v for k, v in after.items() if k != "selected_extractor"}
        assert items_deep(kept) == items_deep(before)
    assert [a["id"] for a in result["articles"]] == ["z", "a", "m", "b", "q"]
    assert "articles: 5" in out and str(target) in out


# --------------------------------------------------------------------------- CT-009

CT_009 = [
    # (stale value, its position among the article's keys). T is absent and N and R
    # hold the same text, so the rule picks N (priority) whatever the stale value said.
    pytest.param("readability", 1, id="other-extractor-second"),
    pytest.param("trafilatura", 3, id="other-extractor-fourth"),
    pytest.param(None, 2, id="null-middle"),
    pytest.param("", 4, id="empty-string-last"),
    pytest.param({"not": "a name"}, 0, id="object-value-first"),
    pytest.param("newspaper4k", 2, id="already-right"),
]


@pytest.mark.parametrize("old, position", CT_009)
def test_ct_009_existing_selected_extractor_recomputed_in_place(
    old: Any, position: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The blocks decide newspaper4k (N and R hold the same text, priority N).
    fields: list[tuple[str, Any]] = [
        ("id", 7),
        ("newspaper4k", {"text": BODY}),
        ("readability", {"cleaned_text": BODY}),
        ("url", "https://example.org"),
    ]
    fields.insert(position, ("selected_extractor", old))
    doc = {"articles": [dict(fields)]}
    inp = tmp_path / "in.json"
    inp.write_bytes(orjson.dumps(doc))
    out = tmp_path / "out.json"

    code, _, err = run_cli(["select", str(inp), "--output", str(out)], capsys)

    assert code == 0, err
    written = out.read_bytes()
    assert written == expected_output(doc)
    result = orjson.loads(written)["articles"][0]
    assert list(result) == [k for k, _ in fields]
    assert list(result)[position] == "selected_extractor"
    assert result["selected_extractor"] == N
    assert listing(tmp_path) == ["in.json", "out.json"]


# --------------------------------------------------------------------------- CT-010

CT_010 = [
    pytest.param(b'{"articles": [', "byte offset 14", id="invalid-json-truncated"),
    pytest.param(b"articles: []", "byte offset 0", id="invalid-json-not-json"),
    pytest.param(
        b'{"articles": [{"a": 1,}]}',
        "$.articles[0] is not valid JSON at byte offset 21",
        id="invalid-json-trailing-comma",
    ),
    pytest.param(b'[{"articles": []}]', "root", id="root-array"),
    pytest.param(b'"articles"', "root", id="root-string"),
    pytest.param(b"null", "root", id="root-null"),
    pytest.param(b'{"items": []}', '"articles"', id="articles-missing"),
    pytest.param(b'{"articles": {"0": {}}}', "$.articles", id="articles-object"),
    pytest.param(b'{"articles": "none"}', "$.articles", id="articles-string"),
    pytest.param(b'{"articles": null}', "$.articles", id="articles-null"),
    pytest.param(b'{"articles": [{}, {}, "x"]}', "$.articles[2]", id="article-not-object"),
]


@pytest.mark.parametrize("data, place", CT_010)
def test_ct_010_invalid_input_error_no_output_no_temp_file(
    data: bytes, place: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inp = tmp_path / "bad_extracted.json"
    inp.write_bytes(data)

    code, out, err = run_cli(["select", str(inp)], capsys)

    assert code == EXIT_INVALID_INPUT
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert str(inp) in err and place in err
    assert listing(tmp_path) == ["bad_extracted.json"]  # no output, no temporary file
    assert inp.read_bytes() == data


# --------------------------------------------------------------------------- CT-011


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"articles": []}, id="bare"),
        pytest.param({"run": 7, "articles": [], "meta": {"é": [1, {"b": None}]}}, id="with-root-keys"),
    ],
)
def test_ct_011_empty_articles_is_valid(
    doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inp = tmp_path / "empty.json"
    inp.write_bytes(orjson.dumps(doc))

    code, out, err = run_cli(["select", str(inp)], capsys)

    assert code == 0, err
    written = (tmp_path / "empty_selected.json").read_bytes()
    assert written == orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    if doc == {"articles": []}:
        assert written == b'{\n  "articles": []\n}\n'
    assert items_deep(orjson.loads(written)) == items_deep(doc)
    assert "articles: 0" in out
    assert listing(tmp_path) == ["empty.json", "empty_selected.json"]


# --------------------------------------------------------------------------- CT-012

CT_012 = [
    # Identical texts: equal shingles, F1 = 1 each, equal counts: newspaper4k first.
    pytest.param(article(BODY, BODY, BODY), N, (T, N, R), id="three-identical"),
    pytest.param(article(BODY, None, BODY), R, (T, R), id="readability-over-trafilatura"),
    pytest.param(article(BODY, BODY, None), N, (T, N), id="newspaper4k-over-trafilatura"),
    pytest.param(article(None, BODY, BODY), N, (N, R), id="newspaper4k-over-readability"),
    # Different texts, exactly equal score and count: each is the shared w0..w99 plus
    # three junk tokens of its own (99 shingles, C = 96, F1 = 192/195 each).
    pytest.param(
        article(*(words("w", 100) + " " + words(j, 3) for j in ("ja", "jb", "jc"))),
        N,
        (T, N, R),
        id="different-texts-equal-scores",
    ),
    pytest.param(
        article(words("w", 100) + " " + words("ja", 3), None, words("w", 100) + " " + words("jc", 3)),
        R,
        (T, R),
        id="different-texts-equal-scores-two",
    ),
]


@pytest.mark.parametrize("art, selected, tie_pool", CT_012)
def test_ct_012_exact_tie_priority_newspaper4k_readability_trafilatura(
    art: dict[str, Any], selected: str, tie_pool: tuple[str, ...]
) -> None:
    sel = assert_decision(art, selected, Reason.CONSENSUS_TIE_PRIORITY, Pool.USABLE)
    assert sel.tie_pool == tie_pool
    assert len({sel.candidate(n).score for n in tie_pool}) == 1
    assert len({sel.candidate(n).shingle_count for n in tie_pool}) == 1


# --------------------------------------------------------------------------- CT-013


@pytest.mark.parametrize(
    "art, selected",
    [
        pytest.param(article(BODY, None, None), T, id="only-trafilatura"),
        pytest.param(article(None, None, "Short."), R, id="only-readability-one-token"),
        pytest.param(article("", "   ", words("w", 3)), R, id="others-empty"),
        pytest.param(article(BODY, BODY, words("w", 2), errors={T: "x", N: "y"}), R, id="others-degraded"),
    ],
)
def test_ct_013_single_active_candidate_selected_without_consensus(art: dict[str, Any], selected: str) -> None:
    sel = assert_decision(art, selected, Reason.SINGLE_CANDIDATE, Pool.USABLE)
    assert sel.consensus_size is None
    assert sel.tie_pool == (selected,)
    assert all(c.score is None and c.coverage is None and c.support is None for c in sel.candidates)


@pytest.mark.parametrize(
    "text, token_count, shingle_count",
    [
        pytest.param("One", 1, 1, id="1-token"),
        pytest.param("One two", 2, 1, id="2-tokens"),
        pytest.param("One, two. Three!", 3, 1, id="3-tokens"),
        pytest.param("one two three four", 4, 1, id="4-tokens"),
        pytest.param("one two three four five", 5, 1, id="5-tokens-one-window"),
        pytest.param("one two three four five six", 6, 2, id="6-tokens-two-windows"),
        pytest.param("a b a b a b a b", 8, 2, id="repeated-windows-counted-once"),
        pytest.param("x x x x", 4, 1, id="4-repeated-tokens"),
    ],
)
def test_ct_013_short_texts_form_one_shingle(text: str, token_count: int, shingle_count: int) -> None:
    tokens = tokenize(text)
    assert len(tokens) == token_count
    assert len(shingles(tokens)) == shingle_count
    if token_count < 5:
        # One shingle of all the tokens: it differs from the shingle of any other
        # short sequence, including a prefix of it.
        assert shingles(tokens) != shingles(tokens[:-1])
    cand = select_article(article(None, text, None)).candidate(N)
    assert (cand.token_count, cand.shingle_count) == (token_count, shingle_count)


@pytest.mark.parametrize(
    "art, selected, reason, consensus",
    [
        # T and N both reduce to the one shingle (breaking, news, today): C = 1,
        # F1 = 2/2 = 1 each; R's shingle (weather) is not shared: F1 = 0.
        # Tie T/N with one shingle each: priority -> N.
        pytest.param(
            article("Breaking news today", "BREAKING: News, today!", "Weather"),
            N,
            Reason.CONSENSUS_TIE_PRIORITY,
            1,
            id="short-texts-agree",
        ),
        # 4 tokens form the shingle (a, b, c, d); 5 tokens the window (a, b, c, d, e):
        # different shingles, no consensus. Two active: larger count; both 1: priority R.
        pytest.param(
            article("a b c d", None, "a b c d e"), R, Reason.NO_CONSENSUS_LARGEST, 0, id="4-tokens-not-a-window-of-5"
        ),
        # 3 tokens vs a long text containing them: (x, y, z) is not a 5-window of it.
        pytest.param(
            article("x y z", None, "x y z " + words("w", 20)),
            R,
            Reason.NO_CONSENSUS_LARGEST,
            0,
            id="short-not-inside-long",
        ),
    ],
)
def test_ct_013_short_text_shingles_in_consensus(
    art: dict[str, Any], selected: str, reason: Reason, consensus: int
) -> None:
    sel = assert_decision(art, selected, reason, Pool.USABLE)
    assert sel.consensus_size == consensus


# --------------------------------------------------------------------------- CT-014

CT_014_SAME_TOKENS = [
    pytest.param("Caf&eacute; &amp; cr&#232;me &#x00E9;t&eacute;", "Café & crème été", id="entities"),
    pytest.param("&lt;b&gt;Bold&lt;/b&gt; claim", "Bold claim", id="entity-escaped-tag-removed-after-unescape"),
    pytest.param("Tom&nbsp;said", "Tom said", id="nbsp-entity"),
    pytest.param("The cafÃ© crÃ¨me costs â‚¬3", "The café crème costs €3", id="mojibake"),
    pytest.param("Hello ![a logo, big](https://x.org/logo.png) world", "Hello world", id="markdown-image"),
    pytest.param("Read [the full story](https://x.org/s?a=1) now", "Read the full story now", id="markdown-link"),
    pytest.param('<p>Hello <b class="x">world</b></p><br/>', "Hello world", id="html-tags"),
    pytest.param("Hello<!-- ad slot\nline 2 -->world", "Hello world", id="html-comment-multiline"),
    pytest.param("ＨＥＬＬＯ ｗｏｒｌｄ １２３", "hello world 123", id="fullwidth"),
    pytest.param("ﬁne ﬂow ﬀ", "fine flow ff", id="ligatures"),
    pytest.param("x² ½ Ⅻ ㎏ ①", "x2 1/2 xii kg 1", id="compatibility-forms"),
    pytest.param("HELLO World", "hello world", id="case"),
    pytest.param("“Hello,” she said — ‘world’… (yes!)", "hello she said world yes", id="punctuation"),
    pytest.param("hello\u00a0\u2009world\u3000again", "hello world again", id="unicode-spaces"),
]


@pytest.mark.parametrize("variant, plain", CT_014_SAME_TOKENS)
def test_ct_014_formatting_only_differences_give_identical_tokens(variant: str, plain: str) -> None:
    assert tokenize(variant) == tokenize(plain)
    assert tokenize(plain)  # the comparison is not between two empty lists
    # In an article: three candidates with the same tokens tie exactly -> newspaper4k,
    # whichever extractor carries the formatted variant.
    long_variant, long_plain = f"{variant} {BODY}", f"{plain} {BODY}"
    for arrangement in ((long_variant, long_plain, long_plain), (long_plain, long_plain, long_variant)):
        sel = assert_decision(article(*arrangement), N, Reason.CONSENSUS_TIE_PRIORITY, Pool.USABLE)
        assert {c.score for c in sel.candidates} == {1}


@pytest.mark.parametrize(
    "left, right",
    [
        pytest.param("e-mail", "email", id="hyphen-separates"),
        pytest.param("Hello world", "Hello world again", id="extra-word"),
        pytest.param("＜b＞bold＜/b＞", "bold", id="fullwidth-brackets-are-not-tags"),
    ],
)
def test_ct_014_real_differences_stay_different(left: str, right: str) -> None:
    assert tokenize(left) != tokenize(right)


CT_014_UNAVAILABLE = [
    pytest.param({}, id="block-missing"),
    pytest.param({"x": None}, id="block-null"),
    pytest.param({"x": "plain string"}, id="block-string"),
    pytest.param({"x": ["text", "abc"]}, id="block-array"),
    pytest.param({"x": 5}, id="block-number"),
    pytest.param({"x": {}}, id="text-field-missing"),
    pytest.param({"x": {"field": None}}, id="text-null"),
    pytest.param({"x": {"field": 42}}, id="text-number"),
    pytest.param({"x": {"field": True}}, id="text-boolean"),
    pytest.param({"x": {"field": ["hello world"]}}, id="text-array"),
    pytest.param({"x": {"field": {"text": "hello world"}}}, id="text-object"),
    pytest.param({"x": {"field": ""}}, id="text-empty"),
    pytest.param({"x": {"field": " \n\t "}}, id="text-whitespace"),
    pytest.param({"x": {"field": "--- ... !!! ???"}}, id="text-punctuation-only"),
    pytest.param({"x": {"field": "<div><br/></div><!-- x -->"}}, id="text-markup-only"),
    pytest.param({"x": {"wrong_field": "hello world"}}, id="text-in-wrong-field"),
]


@pytest.mark.parametrize("name", [T, N, R])
@pytest.mark.parametrize("shape", CT_014_UNAVAILABLE)
def test_ct_014_unavailable_candidates(shape: dict[str, Any], name: str) -> None:
    # Build the shape for this extractor: "x" is its block, "field" its text field,
    # "wrong_field" the text field of another extractor.
    block = shape.get("x", ...)
    if isinstance(block, dict):
        wrong = "cleaned_text" if FIELD[name] == "text" else "text"
        block = {FIELD[name] if k == "field" else wrong if k == "wrong_field" else k: v for k, v in block.items()}
    art: dict[str, Any] = {"id": 1} if block is ... else {"id": 1, name: block}
    # The two others hold the same usable text, so the decision is among them.
    for other in (T, N, R):
        if other != name:
            art[other] = {FIELD[other]: BODY}
    sel = select_article(art)
    cand = sel.candidate(name)
    assert (cand.state, cand.token_count, cand.shingle_count) == (State.UNAVAILABLE, 0, 0)
    assert name not in sel.tie_pool and cand.score is None
    assert sel.pool is Pool.USABLE and sel.consensus_size is not None and sel.consensus_size > 0


@pytest.mark.parametrize(
    "error, present",
    [
        pytest.param(..., False, id="missing"),
        pytest.param(None, False, id="null"),
        pytest.param(False, False, id="false"),
        pytest.param("", False, id="empty-string"),
        pytest.param("  ", False, id="spaces"),
        pytest.param("\n\t \u00a0", False, id="unicode-whitespace"),
        pytest.param("x", True, id="string"),
        pytest.param(" timeout ", True, id="padded-string"),
        pytest.param(0, True, id="zero"),
        pytest.param(0.0, True, id="zero-float"),
        pytest.param({}, True, id="empty-object"),
        pytest.param([], True, id="empty-array"),
        pytest.param(True, True, id="true"),
        pytest.param("false", True, id="string-false"),
    ],
)
def test_ct_014_error_values(error: Any, present: bool) -> None:
    if error is not ...:
        assert error_present(error) is present
    block: dict[str, Any] = {"text": BODY}
    if error is not ...:
        block["error"] = error
    # N carries the error value; T is a usable snippet. If the error counts, N is
    # degraded and T is the single usable candidate; if not, N and T are compared
    # and the full body wins.
    sel = select_article({"trafilatura": {"text": SNIPPET}, "newspaper4k": block})
    assert sel.candidate(N).state is (State.DEGRADED if present else State.USABLE)
    if present:
        assert (sel.selected, sel.reason) == (T, Reason.SINGLE_CANDIDATE)
    else:
        assert sel.reason is not Reason.SINGLE_CANDIDATE and sel.consensus_size


def test_ct_014_whitespace_only_error_but_no_text_is_unavailable() -> None:
    sel = select_article({"newspaper4k": {"text": "", "error": "HTTP 500"}, "readability": {"cleaned_text": "ok"}})
    assert sel.candidate(N).state is State.UNAVAILABLE
    assert (sel.selected, sel.reason, sel.pool) == (R, Reason.SINGLE_CANDIDATE, Pool.USABLE)
