"""The compiled kernel (``selection_core._kernel``) against the pure-Python path.

The kernel is optional: without it these tests skip, except one, which fails
when ``CONTENT_SELECTION_REQUIRE_KERNEL=1`` says the kernel must have been built
(CI and the development environment set it).

What is checked:

* its table: for every code point, ``str.lower`` and the ``regex`` token pattern;
* its counts: token counts, and the regions of the shingle sets' Venn diagram,
  equal the ones computed from ``text_shingles`` (Hypothesis, on texts full of
  the traps of lower-casing and tokenizing: combining marks, astral letters and
  emoji, final sigma, dotted I, width forms, short texts, repeated windows,
  identical texts, missing texts), and on arbitrary code points, surrogates included;
* whole decisions: ``Selection.to_dict()`` with and without the kernel, on
  generated articles (all error values) and on the 181 real articles, and the
  plain reference rule of ``tests/reference_rule.py``;
* the C side: argument checks, no memory kept after a call, the same answers
  from several threads at once (it runs without the GIL).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from unittest import mock

import ftfy.badness
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection_core import kernel, select_article
from selection_core.config import EXTRACTORS, SHINGLE_SIZE, TEXT_FIELDS
from selection_core.normalize import nfkc_form, tokenize_line
from selection_core.shingles import shingles, text_shingles
from selection_core.tokens import MOJIBAKE_MARKERS, MOJIBAKE_MAX_WIDTH, TOKEN
from tests.support import DATA, examples
from tests.support.reference_rule import assert_agrees_with_reference

select_module = importlib.import_module("selection_core.select")
normalize_module = importlib.import_module("selection_core.normalize")
BATCH = DATA / "aeb_batch_extracted.json"
BUILT = importlib.util.find_spec("selection_core._kernel") is not None

needs_kernel = pytest.mark.skipif(kernel.KERNEL is None, reason="the compiled kernel is not built (or is switched off)")


def profile(max_examples: int) -> settings:
    return settings(
        max_examples=examples(max_examples),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@contextmanager
def pure_path() -> Iterator[None]:
    """Run the pure-Python path, as without the kernel."""
    with mock.patch.object(kernel, "KERNEL", None):
        yield


def both_paths(article: dict[str, Any]) -> dict[str, Any]:
    """``select_article(article).to_dict()``, asserted equal with and without the kernel."""
    assert select_module._measure_sizes(article) is not None  # the kernel took it
    with_kernel = select_article(article, 7).to_dict()
    with pure_path():
        without = select_article(article, 7).to_dict()
    assert with_kernel == without, article
    return with_kernel


def pure_counts(texts: tuple[str | None, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """What ``kernel.article_counts`` must return, from the reference API (raw texts)."""
    measured = [text_shingles(t) if t is not None else (0, frozenset()) for t in texts]
    regions = [0] * (1 << len(texts))
    for shingle in frozenset().union(*(sh for _, sh in measured)):
        regions[sum(1 << i for i, (_, sh) in enumerate(measured) if shingle in sh)] += 1
    return tuple(n for n, _ in measured), tuple(regions)


def kernel_counts(texts: tuple[str | None, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    forms: dict[str, str] = {}
    return kernel.article_counts(tuple(None if t is None else forms.setdefault(t, nfkc_form(t)) for t in texts))


# ============================================================ built and switched on


def test_kernel_is_built_where_required() -> None:
    """CI and the development environment set CONTENT_SELECTION_REQUIRE_KERNEL=1:
    there, an install that silently fell back to pure Python is a failure."""
    if os.environ.get("CONTENT_SELECTION_REQUIRE_KERNEL", "") in ("", "0"):
        pytest.skip("CONTENT_SELECTION_REQUIRE_KERNEL is not set")
    assert BUILT, "selection_core._kernel was not built: is a C compiler (gcc) and Python.h installed?"
    import selection_core._kernel  # noqa: F401


@needs_kernel
@pytest.mark.parametrize("size", [1, SHINGLE_SIZE - 1, SHINGLE_SIZE + 1, 2 * SHINGLE_SIZE])
def test_a_kernel_of_another_shingle_size_is_refused(size: int) -> None:
    """The size is compiled into the kernel: its first use checks it against config.SHINGLE_SIZE."""
    kernel.check_shingle_size(kernel.KERNEL, SHINGLE_SIZE)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="shingles of another size"):
        kernel.check_shingle_size(kernel.KERNEL, size)  # type: ignore[arg-type]


@pytest.mark.skipif(kernel.BUILT is None, reason="the compiled kernel is not built")
def test_the_first_use_of_the_kernel_checks_its_shingle_size(mocker) -> None:
    """The tables are built before the kernel's first call; a kernel of another size stops them."""
    mocker.patch.object(kernel, "check_shingle_size", side_effect=RuntimeError("shingles of another size"))
    with pytest.raises(RuntimeError, match="shingles of another size"):
        kernel.tables.__wrapped__()


# ===================================================================== the table


@needs_kernel
def test_fold_table_is_str_lower_and_the_token_pattern_on_every_code_point() -> None:
    table = memoryview(kernel.tables().fold).cast("I")
    assert len(table) == 0x110000
    unknown = []
    for cp in range(0x110000):
        c = chr(cp)
        low = c.lower()
        if len(low) != 1 or cp == 0x3A3:  # several characters, or final sigma
            unknown.append(cp)
            assert table[cp] == kernel.FOLD_UNKNOWN, hex(cp)
            continue
        expected = ord(low) if TOKEN.fullmatch(low) else 0
        assert table[cp] == expected, hex(cp)
    assert unknown == [0x130, 0x3A3]  # İ and Σ, today; a new one would be handled the same way
    assert kernel.tables().lowered_ok


# ==================================================================== the counts

# Pieces chosen for the tokenizer and the lower-casing: cases, combining marks,
# astral letters (CJK extension B), emoji (not letters), digits of other scripts,
# context-dependent lower case (Σ), an expansion (İ), width and compatibility
# forms, separators, line breaks.
PIECES = [
    "the",
    "The",
    "THE",
    "news",
    "NEWS",
    "2024",
    "x2",
    "Straße",
    "ẞ",
    "İstanbul",
    "i\u0307",
    "ΟΔΟΣ",
    "ΣΑΣ",
    "σοφός",
    "Σ",
    "ǅ",
    "Ǆ",
    "東京",
    "\U00020000\U0002a6d6",
    "😀",
    "👍🏽",
    "e\u0301",
    "\u0301",
    "A\u030a",
    "Å",
    "K",
    "ﬁne",
    "ＷＩＤＴＨ",
    "１２３",
    "٣٤",
    "x²",
    "Ⅻ",
    "①",
    "ÿ",
    "Ÿ",
    "\u00a0",
    " ",
    "  ",
    "\n",
    "\n\n",
    ",",
    "—",
    "’",
    "&amp;",
    "<b>",
    "[a](b)",
    "cafÃ©",
]

words = st.lists(st.sampled_from(PIECES), max_size=40)


@st.composite
def related_texts(draw: st.DrawFn) -> tuple[str | None, ...]:
    """Three texts that share words, windows or all of their text, or are missing."""
    base = draw(words)
    texts: list[str | None] = []
    for _ in range(3):
        how = draw(st.sampled_from(["same", "slice", "edit", "own", "none", "short"]))
        if how == "same":
            parts = base
        elif how == "slice":
            i, j = sorted(draw(st.tuples(st.integers(0, len(base)), st.integers(0, len(base)))))
            parts = base[i:j]
        elif how == "edit":
            parts = list(base)
            if parts:
                parts[draw(st.integers(0, len(parts) - 1))] = draw(st.sampled_from(PIECES))
            parts = parts + draw(words)
        elif how == "own":
            parts = draw(words)
        elif how == "short":
            parts = draw(st.lists(st.sampled_from(PIECES), max_size=4))
        else:
            texts.append(None)
            continue
        sep = draw(st.sampled_from([" ", "\n", ""]))
        texts.append(sep.join(parts))
    if draw(st.booleans()) and texts[0] is not None:
        texts[2] = texts[0]  # the same object twice
    return tuple(texts)


@needs_kernel
@profile(600)
@given(related_texts())
def test_kernel_counts_equal_the_pure_path(texts: tuple[str | None, ...]) -> None:
    assert kernel_counts(texts) == pure_counts(texts)


@needs_kernel
@profile(200)
@given(st.lists(st.sampled_from(["a", "b", "A", "c"]), min_size=5, max_size=60), st.integers(1, 3))
def test_repeated_windows(tokens: list[str], copies: int) -> None:
    text = " ".join(tokens)
    texts = (text, " ".join(tokens[::-1]), "\n".join([text] * copies))
    assert kernel_counts(texts) == pure_counts(texts)


@st.composite
def texts_of_shared_lines(draw: st.DrawFn) -> tuple[str | None, ...]:
    """Texts made of a few lines (0 to 7 tokens each), shared and repeated between
    and within texts, so that windows cross line breaks after short and long lines."""
    vocabulary = ["a", "b", "c", "A", "ΟΔΟΣ", "é", "e\u0301", "😀", "x\U00020000"]
    line = st.lists(st.sampled_from(vocabulary), max_size=7).map(" ".join)
    pool = draw(st.lists(line, min_size=1, max_size=6))
    texts: list[str | None] = []
    for _ in range(3):
        picks = draw(st.lists(st.sampled_from(pool), max_size=8))
        texts.append(draw(st.sampled_from(["\n", "\n\n", " \n"])).join(picks))
    return tuple(texts)


@needs_kernel
@profile(400)
@given(texts_of_shared_lines())
def test_lines_shared_between_texts(texts: tuple[str | None, ...]) -> None:
    assert kernel_counts(texts) == pure_counts(texts)


# Any code point, surrogates included (a str can hold them; JSON input cannot).
any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), max_size=30)


@needs_kernel
@profile(400)
@given(st.tuples(any_text, any_text, st.none() | any_text), st.integers(0, 2**64 - 1))
def test_tokens_of_any_code_points(texts: tuple[str | None, ...], seed: int) -> None:
    """The kernel on text after NFKC: lower-cased and tokenized as ``str.lower`` and
    the token pattern do, whatever the seed of its hash tables."""
    found = kernel.KERNEL.article_counts(texts, kernel.tables().fold, seed)  # type: ignore[union-attr]
    if found is None:  # an unknown code point: Python lowers, the kernel tokenizes
        assert any(t is not None and ("\u0130" in t or "\u03a3" in t) for t in texts)
        found = kernel.KERNEL.article_counts(  # type: ignore[union-attr]
            tuple(None if t is None else t.lower() for t in texts), kernel.tables().fold, seed
        )
    tokens = [tokenize_line(t.lower()) if t is not None else [] for t in texts]
    sets = [shingles(t) for t in tokens]
    regions = [0] * 8
    for sh in frozenset().union(*sets):
        regions[sum(1 << i for i, s in enumerate(sets) if sh in s)] += 1
    assert found == (tuple(map(len, tokens)), tuple(regions))


@needs_kernel
@pytest.mark.parametrize(
    "texts",
    [
        pytest.param((None, None, None), id="nothing"),
        pytest.param(("", "", ""), id="empty"),
        pytest.param((" , — \n", None, "😀"), id="no-tokens"),
        pytest.param(("one", "one", "ONE"), id="one-token-equal-after-lower"),
        pytest.param(("a b c d", "a b c d e", "b c d e"), id="short-and-full"),
        pytest.param(("a b c d e", "A B C D E", "a b c d e f"), id="case"),
        pytest.param(("ΟΔΟΣ ΣΑΣ Σ", "οδος σας σ", "οδοσ σασ σ"), id="final-sigma"),
        pytest.param(("İstanbul İ", "i̇stanbul i̇", "istanbul i"), id="dotted-capital-i"),
        pytest.param(("東京 \U00020000x", "東京 \U00020000X", "東京"), id="astral"),
        pytest.param(("café", "cafe\u0301", "CAFÉ"), id="composed-and-not"),
        pytest.param(("ﬁne ＷＩＤＴＨ", "fine width", "ﬁne"), id="compatibility-forms"),
        pytest.param(("a\nb\nc\nd\ne\nf", "a b c d e f", "f e d c b a"), id="line-breaks"),
    ],
)
def test_kernel_counts_cases(texts: tuple[str | None, ...]) -> None:
    assert kernel_counts(texts) == pure_counts(texts)


@needs_kernel
def test_declined_without_lowered_fallback_uses_the_pure_path() -> None:
    """Where the table could not take lowered text either, the article goes the pure way."""
    article = {name: {TEXT_FIELDS[name]: "ΟΔΟΣ ΣΑΣ one two three"} for name in EXTRACTORS}
    with mock.patch.object(kernel.tables(), "lowered_ok", False):
        assert select_module._measure_sizes(article) is None
        with_kernel = select_article(article).to_dict()
    with pure_path():
        assert select_article(article).to_dict() == with_kernel


# ============================================================ whole decisions

ERRORS = [None, False, "", "   ", "\n", "x", "timeout", 0, 1, True, {}, [], {"code": 1}]
MISSING = object()


@st.composite
def articles(draw: st.DrawFn) -> dict[str, Any]:
    texts = draw(related_texts())
    article: dict[str, Any] = {"id": "a"}
    for name, text in zip(EXTRACTORS, texts):
        shape = draw(st.sampled_from(["block", "block", "block", "no-block", "not-object", "not-string"]))
        if shape == "no-block":
            continue
        if shape == "not-object":
            article[name] = draw(st.sampled_from([None, "text", 3, []]))
            continue
        block: dict[str, Any] = {}
        if shape == "not-string":
            block[TEXT_FIELDS[name]] = draw(st.sampled_from([None, 3, ["a"], {"a": 1}]))
        elif text is not None:
            block[TEXT_FIELDS[name]] = text
        error = draw(st.sampled_from([MISSING, *ERRORS]))
        if error is not MISSING:
            block["error"] = error
        article[name] = block
    return article


@needs_kernel
@profile(500)
@given(articles())
def test_decisions_equal_with_and_without_the_kernel(article: dict[str, Any]) -> None:
    both_paths(article)
    assert_agrees_with_reference(article)


@needs_kernel
def test_the_181_real_articles_decide_the_same() -> None:
    articles_ = orjson.loads(BATCH.read_bytes())["articles"]
    assert len(articles_) == 181
    for article in articles_:
        both_paths(article)


# ======================================================= mojibake marker windows


def python_marker_windows(text: str) -> list[tuple[int, int]]:
    """The windows ``normalize._maybe_mojibake`` searches, computed as it does."""
    w = MOJIBAKE_MAX_WIDTH
    out = []
    lo = hi = -1
    for m in MOJIBAKE_MARKERS.finditer(text):  # type: ignore[union-attr]
        p = m.start()
        if p - w + 1 <= hi:
            hi = p + w
            continue
        if hi > 0:
            out.append((max(lo, 0), hi))
        lo, hi = max(p - w + 1, 0), p + w
    if hi > 0:
        out.append((max(lo, 0), hi))
    return out


needs_markers = pytest.mark.skipif(MOJIBAKE_MARKERS is None, reason="ftfy's pattern has no marker analysis")


@needs_kernel
@needs_markers
def test_marker_table_is_the_marker_pattern_on_every_code_point() -> None:
    table = kernel.tables().marker
    pattern = MOJIBAKE_MARKERS
    assert pattern is not None
    assert [cp for cp in range(0x110000) if table[cp]] == [cp for cp in range(0x110000) if pattern.match(chr(cp))]


marker_texts = st.lists(
    st.sampled_from(["a", " ", "\n", "Ã", "Â", "©", "é", "€", "😀", "\U00020000", "â€™", "Ã©", "x" * 9]), max_size=40
).map("".join)


@needs_kernel
@needs_markers
@profile(400)
@given(marker_texts)
def test_marker_windows_are_those_of_maybe_mojibake(text: str) -> None:
    windows = kernel.marker_windows(text)
    assert windows == python_marker_windows(text)
    bad = ftfy.badness.BADNESS_RE
    assert normalize_module._maybe_mojibake(text) == any(bad.search(text, lo, hi) for lo, hi in windows)


# ===================================================================== the C side


@needs_kernel
@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param((["a"], None, 0), TypeError, id="texts-not-a-tuple"),
        pytest.param((("a", 3), None, 0), TypeError, id="text-not-a-str"),
        pytest.param(((), None, 0), ValueError, id="no-text"),
        pytest.param((("a",) * 9, None, 0), ValueError, id="nine-texts"),
        pytest.param((("a",), b"\0" * 16, 0), ValueError, id="short-table"),
        pytest.param((("a",), None, "0"), TypeError, id="seed-not-an-int"),
    ],
)
def test_bad_arguments(args: tuple[Any, Any, Any], error: type[Exception]) -> None:
    texts, table, seed = args
    with pytest.raises(error):
        kernel.KERNEL.article_counts(texts, kernel.tables().fold if table is None else table, seed)  # type: ignore[union-attr]


@needs_kernel
@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param((b"x", b"\0" * 0x110000, 7), TypeError, id="text-not-a-str"),
        pytest.param(("x", b"\0" * 16, 7), ValueError, id="short-table"),
        pytest.param(("x", b"\0" * 0x110000, 0), ValueError, id="no-width"),
    ],
)
def test_marker_windows_bad_arguments(args: tuple[Any, Any, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        kernel.KERNEL.marker_windows(*args)  # type: ignore[union-attr]


@needs_kernel
def test_more_texts_than_three() -> None:
    texts = ("a b c d e f", "b c d e f", "x", "a b c d e f", None, "B C D E F g", "", "x")
    counts, regions = kernel.article_counts(texts)  # type: ignore[misc]
    assert counts == (6, 5, 1, 6, 0, 6, 0, 1)
    assert len(regions) == 256 and sum(regions) == 4  # abcde, bcdef, x, cdefg


@needs_kernel
def test_no_memory_kept_after_calls() -> None:
    articles_ = orjson.loads(BATCH.read_bytes())["articles"][:40]
    calls = []
    for article in articles_:
        blocks = [article.get(n) for n in EXTRACTORS]
        calls.append(tuple(b.get(TEXT_FIELDS[n]) if isinstance(b, dict) else None for n, b in zip(EXTRACTORS, blocks)))
    forms = [tuple(None if t is None else nfkc_form(t) for t in c) for c in calls]
    for texts in forms:  # warm up
        kernel.article_counts(texts)
    # Only memory allocated under kernel.py counts: in the full suite, background
    # threads (Prefect's client, log and event workers) allocate at the same time.
    only_kernel = [tracemalloc.Filter(True, kernel.__file__)]
    tracemalloc.start()  # traces PyMem_Raw* too
    try:
        before_snap = tracemalloc.take_snapshot().filter_traces(only_kernel)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            for texts in forms:
                kernel.article_counts(texts)
        peak = tracemalloc.get_traced_memory()[1]
        after_snap = tracemalloc.take_snapshot().filter_traces(only_kernel)
    finally:
        tracemalloc.stop()
    kept = sum(t.size for t in after_snap.traces) - sum(t.size for t in before_snap.traces)
    assert kept < 4096
    assert peak - before > 10_000  # the tables were traced, then freed
    refs = sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else None
    if refs is not None:  # a debug build of Python counts references
        for texts in forms:
            kernel.article_counts(texts)
        assert sys.gettotalrefcount() - refs < 100


@needs_kernel
def test_same_answers_from_threads() -> None:
    articles_ = orjson.loads(BATCH.read_bytes())["articles"]
    expected = [select_article(a, i).to_dict() for i, a in enumerate(articles_)]
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda ia: select_article(ia[1], ia[0]).to_dict(), enumerate(articles_)))
    assert found == expected
