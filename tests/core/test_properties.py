"""Hypothesis properties of the selection core and the batch command.

* Batches: determinism, non-destructiveness (key order included), the closed set
  of answers, idempotence, invariance to the order of an article's keys, N in = N out.
* The rule: a deliberately slow, straightforward reference implementation written
  here from the text of issue 2 (``html.unescape``, ``ftfy.fix_encoding``, the
  issue's regexes, NFKC, ``lower``, ``regex.findall``, sets of token tuples,
  ``Fraction``) must agree with ``select_article`` and ``tokenize`` on texts full
  of entities, Markdown, HTML, mojibake, width forms, quotes, dashes, no-break
  spaces and emoji. The core's normalization has fast paths; this is the test
  that pins them to the rule.

Every test uses explicit, derandomized, database-free settings, so a run is the
same on every machine.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import ftfy
import ftfy.bad_codecs  # noqa: F401  (registers the sloppy-windows-* codecs)
import ftfy.badness
import ftfy.chardata
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection_cli.main import main
from selection_core import select_article, select_batch_bytes, tokenize
from selection_core.dataset import dataset_row
from tests.support import examples
from tests.support.reference_rule import assert_agrees_with_reference, ref_tokens

EXTRACTORS = ("trafilatura", "newspaper4k", "readability")
TEXT_FIELD = {"trafilatura": "text", "newspaper4k": "text", "readability": "cleaned_text"}
SELECTED = "selected_extractor"


def profile(max_examples: int) -> settings:
    return settings(
        max_examples=examples(max_examples),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


# =========================================================================== texts

# Fragments that exercise every normalization step and the usual traps.
FRAGMENTS = [
    # words, in several scripts and cases
    "the",
    "News",
    "CITY",
    "council",
    "voted",
    "2024",
    "x2",
    "Straße",
    "ẞ",
    "İstanbul",
    "ΟΔΟΣ",
    "σοφός",
    "東京",
    "日本語",
    "naïve",
    "Ærø",
    "ǅ",
    "ﬁne",
    "ﬂow",
    "ｆｕｌｌ",
    "ＷＩＤＴＨ",
    "１２３",
    "x²",
    "½",
    "Ⅻ",
    "①",
    "㎏",
    "e\u0301",
    "A\u030a",
    "\u0301",
    "K",
    "Å",
    # entities (step 1)
    "&amp;",
    "&lt;b&gt;",
    "&lt;/b&gt;",
    "&eacute;",
    "&#233;",
    "&#xE9;",
    "&nbsp;",
    "&mdash;",
    "&quot;",
    "&amp;amp;",
    "&lt;!--",
    "--&gt;",
    "&#91;",
    "&#93;",
    "&#40;",
    "&#41;",
    "&unknown;",
    "&",
    "&#0;",
    "&#x110000;",
    # mojibake (step 2)
    "cafÃ©",
    "crÃ¨me",
    "â€™",
    "â€œquotedâ€\x9d",
    "Ã¼ber",
    "naÃ¯ve",
    "Ã\xa0 la",
    "SÃ£o",
    "ðŸ˜€",
    "â€”",
    "Ã",
    "Â",
    "\x80",
    "\x9d",
    "Ã©tÃ©",
    # Markdown (steps 3-4)
    "![logo](https://x.org/a.png)",
    "![](x)",
    "[the story](https://x.org/s)",
    "[",
    "]",
    "(",
    ")",
    "![",
    "[a](b)",
    "![a [b] c](d)",
    "[link](",
    "](x)",
    "!",
    # HTML (step 5)
    "<p>",
    "</p>",
    "<br/>",
    '<b class="x">',
    "<!-- ad -->",
    "<!--",
    "-->",
    "<",
    ">",
    "<3",
    "a<b",
    "</a\nb>",
    "<!-- multi\nline -->",
    "<script>",
    "＜b＞",
    # spaces, quotes, dashes, punctuation, emoji, controls
    " ",
    "  ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    "\u00a0",
    "\u2009",
    "\u3000",
    "\u2028",
    "\u200b",
    "\ufeff",
    "“",
    "”",
    "‘",
    "’",
    "«",
    "»",
    "„",
    "–",
    "—",
    "…",
    "•",
    "·",
    "´",
    "′",
    ",",
    ".",
    "!",
    "?",
    "-",
    "'",
    '"',
    "😀",
    "👩‍👩‍👧",
    "🇫🇷",
    "\u0085",
    "\x00",
]


def _suspicious_characters() -> list[str]:
    """The non-ASCII characters ftfy's mojibake heuristic looks for (ranges expanded),
    read from ftfy itself, so that generated text hits every branch of it."""
    pattern = ftfy.badness.BADNESS_RE.pattern
    chars = {c for c in pattern if ord(c) > 127}
    for a, b in re.findall(r"([^\x00-\x7f])-([^\x00-\x7f])", pattern):
        chars.update(chr(c) for c in range(ord(a), ord(b) + 1))
    return sorted(chars)


SUSPICIOUS = _suspicious_characters()
# The single-byte encodings ftfy can undo; UTF-8 read as one of them is mojibake.
MOJIBAKE_CODECS = list(ftfy.chardata.CHARMAP_ENCODINGS)
MOJIBAKE_SOURCE = st.text(
    alphabet=st.characters(min_codepoint=0xA0, max_codepoint=0x33FF) | st.sampled_from("😀👍🇫🇷—’“”é東京"),
    min_size=1,
    max_size=4,
)


@st.composite
def mojibake(draw: st.DrawFn) -> str:
    """Real mojibake: UTF-8 bytes of non-ASCII text decoded with a wrong single-byte codec."""
    source = draw(MOJIBAKE_SOURCE)
    return source.encode("utf-8").decode(draw(st.sampled_from(MOJIBAKE_CODECS)), errors="replace")


@st.composite
def rich_texts(draw: st.DrawFn, max_parts: int = 30) -> str:
    """Text made of the fragments above, mojibake, separators and arbitrary characters."""
    part = st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from(FRAGMENTS),
        st.text(max_size=4),
        st.text(alphabet=st.characters(codec="latin-1"), max_size=4),
        mojibake(),
        st.text(alphabet=st.sampled_from(SUSPICIOUS) | st.sampled_from("aZ \n"), min_size=1, max_size=8),
    )
    parts = draw(st.lists(part, max_size=max_parts))
    seps = draw(st.lists(st.sampled_from([" ", " ", "", "\n", ", "]), min_size=len(parts), max_size=len(parts)))
    return "".join(p + s for p, s in zip(parts, seps, strict=True))


# =========================================================================== reference properties


@pytest.mark.slow
@profile(1000)
@given(rich_texts())
def test_tokenize_agrees_with_reference(text: str) -> None:
    assert tokenize(text) == ref_tokens(text)


@profile(300)
@given(rich_texts(max_parts=80), st.integers(0, 3))
def test_single_text_counts_agree_with_reference(text: str, copies: int) -> None:
    # The core computes tokens and shingles per text inside select_article (not with
    # tokenize); a lone text, repeated in 0-3 other blocks, must count the same.
    names = EXTRACTORS[: copies + 1] if copies < 3 else EXTRACTORS
    article = {n: {TEXT_FIELD[n]: text} for n in names}
    assert_agrees_with_reference(article)


@st.composite
def line_sharing_articles(draw: st.DrawFn) -> dict[str, Any]:
    """Three texts assembled from a small pool of lines, so that lines (and pairs of
    consecutive lines) recur within and across an article's texts, as they do
    when extractors agree."""
    pool = draw(st.lists(rich_texts(max_parts=8), min_size=1, max_size=6))
    article: dict[str, Any] = {}
    for name in draw(st.permutations(EXTRACTORS)):
        if draw(st.integers(0, 7)) == 0:
            continue
        picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=14))
        joiner = draw(st.sampled_from(["\n", "\n", "\n\n", " ", "\r\n"]))
        block: dict[str, Any] = {TEXT_FIELD[name]: joiner.join(pool[i] for i in picks)}
        if draw(st.integers(0, 5)) == 0:
            block["error"] = draw(st.sampled_from([None, False, "", " ", "x", 0, {}, [], True]))
        article[name] = block
    return article


@profile(250)
@given(line_sharing_articles())
def test_select_article_agrees_with_reference(article: dict[str, Any]) -> None:
    assert_agrees_with_reference(article)


WORDS = ["alpha", "Beta", "GAMMA", "δέλτα", "東京", "naïve", "cafÃ©", "café", "ｆｕｌｌ", "42", "x²", "ﬁne"]
NOISE = [
    " ",
    " ",
    "\n",
    ", ",
    " — ",
    "&amp; ",
    " <b>",
    "</b> ",
    "&nbsp;",
    "“",
    "” ",
    " [",
    "](u) ",
    "![i](u)",
    "\u00a0",
]


@st.composite
def agreeing_articles(draw: st.DrawFn) -> dict[str, Any]:
    """Three overlapping versions of one text, with formatting noise: the realistic
    case, where consensus, scores and ties all matter."""
    rnd: random.Random = draw(st.randoms(use_true_random=True))
    base = rnd.choices(WORDS, k=rnd.choice([3, 10, 30, 60]))
    article: dict[str, Any] = {}
    for name in EXTRACTORS:
        if rnd.random() < 0.1:
            continue
        i, j = rnd.randint(0, len(base) // 4), rnd.randint(3 * len(base) // 4, len(base))
        tokens = rnd.choices(WORDS, k=rnd.randint(0, 3)) + base[i:j] + rnd.choices(WORDS, k=rnd.randint(0, 3))
        text = "".join(t + rnd.choice(NOISE) for t in tokens)
        block: dict[str, Any] = {TEXT_FIELD[name]: text}
        if rnd.random() < 0.15:
            block["error"] = rnd.choice(["failed", 0, True])
        article[name] = block
    return article


@profile(300)
@given(agreeing_articles())
def test_overlapping_versions_agree_with_reference(article: dict[str, Any]) -> None:
    assert_agrees_with_reference(article)


def test_reference_agrees_on_known_mojibake_and_markup() -> None:
    # A fixed sanity row for the reference itself: mojibake, an entity-escaped tag,
    # a Markdown link and fullwidth letters all normalize to the plain words.
    assert ref_tokens("cafÃ© &lt;b&gt;[ＮＥＷＳ](u)&lt;/b&gt;") == ["café", "news"]
    assert tokenize("cafÃ© &lt;b&gt;[ＮＥＷＳ](u)&lt;/b&gt;") == ["café", "news"]


# =========================================================================== batches

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=6,
)
BLOCK_TEXTS = st.one_of(
    rich_texts(max_parts=12),
    st.sampled_from(["one two three four five six seven", "one two three four five six", "four five six seven"]),
    st.text(max_size=20),
    JSON_SCALARS,
)


@st.composite
def blocks(draw: st.DrawFn, name: str) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON_VALUES)  # not an object
    block: dict[str, Any] = draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=2))
    block[TEXT_FIELD[name]] = draw(BLOCK_TEXTS)
    if draw(st.booleans()):
        block["error"] = draw(st.sampled_from([None, False, "", " ", "boom", 0, {}, [], True]))
    extra = draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=2))
    block.update({k: v for k, v in extra.items() if k not in block})
    return block


@st.composite
def batch_articles(draw: st.DrawFn) -> dict[str, Any]:
    items: dict[str, Any] = dict(draw(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)))
    for name in EXTRACTORS:
        if draw(st.integers(0, 4)):
            items[name] = draw(blocks(name))
    if draw(st.integers(0, 3)) == 0:
        items[SELECTED] = draw(st.one_of(st.sampled_from(EXTRACTORS), JSON_VALUES))
    keys = draw(st.permutations(list(items)))
    return {k: items[k] for k in keys}


@st.composite
def batches(draw: st.DrawFn) -> dict[str, Any]:
    root = {
        k: v for k, v in draw(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3)).items() if k != "articles"
    }
    keys = list(root)
    keys.insert(draw(st.integers(0, len(keys))), "articles")
    root["articles"] = draw(st.lists(batch_articles(), max_size=5))
    return {k: root[k] for k in keys}


SERIALIZERS = {
    "orjson-compact": lambda d: orjson.dumps(d),
    "orjson-indent": lambda d: orjson.dumps(d, option=orjson.OPT_INDENT_2),
    "json-ascii": lambda d: json.dumps(d, ensure_ascii=True).encode(),
    "json-utf8-spaced": lambda d: json.dumps(d, ensure_ascii=False, indent="\t", separators=(" , ", " : ")).encode(),
}


@st.composite
def batch_bytes(draw: st.DrawFn) -> tuple[dict[str, Any], bytes]:
    doc = draw(batches())
    return doc, SERIALIZERS[draw(st.sampled_from(sorted(SERIALIZERS)))](doc)


def deep_items(value: Any) -> Any:
    """Comparable form keeping key order, and types (1, 1.0 and True stay apart)."""
    if isinstance(value, dict):
        return ("object", [(k, deep_items(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("array", [deep_items(v) for v in value])
    return (type(value).__name__, repr(value))


def with_selection(article: dict[str, Any], selected: str) -> dict[str, Any]:
    """The article as the output must hold it: the key replaced in place, or appended."""
    out = dict(article)
    out[SELECTED] = selected
    return out


@profile(100)
@given(batch_bytes())
def test_same_input_same_bytes(case: tuple[dict[str, Any], bytes]) -> None:
    _, data = case
    first, sels1 = select_batch_bytes(data)
    second, sels2 = select_batch_bytes(bytes(data))
    assert first == second
    assert [s.to_dict() for s in sels1] == [s.to_dict() for s in sels2]


@profile(100)
@given(batch_bytes())
def test_output_is_input_plus_selection(case: tuple[dict[str, Any], bytes]) -> None:
    doc, data = case
    out, selections = select_batch_bytes(data)
    result = json.loads(out)
    assert out == orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n"
    # N in, N out, same order; every answer one of the three names.
    assert len(result["articles"]) == len(doc["articles"]) == len(selections)
    assert [s.index for s in selections] == list(range(len(doc["articles"])))
    assert all(a[SELECTED] in EXTRACTORS for a in result["articles"])
    assert [a[SELECTED] for a in result["articles"]] == [s.selected for s in selections]
    # Nothing else changed, key order included: root keys, articles, nested values.
    expected = {k: v for k, v in doc.items()}
    expected["articles"] = [with_selection(a, s.selected) for a, s in zip(doc["articles"], selections, strict=True)]
    assert deep_items(result) == deep_items(expected)
    for before, after in zip(doc["articles"], result["articles"], strict=True):
        without = {k: v for k, v in after.items() if k != SELECTED}
        assert deep_items(without) == deep_items({k: v for k, v in before.items() if k != SELECTED})
        if SELECTED in before:
            assert list(after).index(SELECTED) == list(before).index(SELECTED)
        else:
            assert list(after)[-1] == SELECTED


@profile(100)
@given(batch_bytes())
def test_selecting_its_own_output_changes_no_byte(case: tuple[dict[str, Any], bytes]) -> None:
    _, data = case
    out, selections = select_batch_bytes(data)
    again, selections_again = select_batch_bytes(out)
    assert again == out
    assert [s.to_dict() for s in selections_again] == [s.to_dict() for s in selections]


@profile(100)
@given(batches(), st.randoms(use_true_random=True))
def test_order_of_blocks_inside_articles_does_not_matter(doc: dict[str, Any], rnd: random.Random) -> None:
    shuffled = dict(doc)
    shuffled["articles"] = []
    for art in doc["articles"]:
        keys = list(art)
        rnd.shuffle(keys)
        shuffled["articles"].append({k: art[k] for k in keys})
    _, original = select_batch_bytes(orjson.dumps(doc))
    _, reordered = select_batch_bytes(orjson.dumps(shuffled))
    assert [s.to_dict() for s in reordered] == [s.to_dict() for s in original]


@profile(150)
@given(agreeing_articles(), st.permutations(EXTRACTORS))
def test_order_of_blocks_with_shared_lines_does_not_matter(article: dict[str, Any], order: list[str]) -> None:
    # Agreeing texts share lines, which the core may compute once per article:
    # whichever block comes first must not change any number.
    reordered = {k: article[k] for k in order if k in article}
    assert select_article(reordered).to_dict() == select_article(article).to_dict()


@given(batch_articles())
def test_every_article_has_a_dataset_row_with_its_selected_text(article: dict[str, Any]) -> None:
    # The text column is the selected block's text field when it is a string, else "" (docs/rule.md, the dataset).
    selection = select_article(article)
    seen: list[str] = []
    row = dataset_row(article, selection, lambda text: (seen.append(text), ("xx", 0.5))[1])
    block = article.get(selection.selected)
    held = block.get(TEXT_FIELD[selection.selected]) if isinstance(block, dict) else None
    assert row["text"] == (held if isinstance(held, str) else "") and seen == [row["text"]]  # the language of that text
    assert row["selected_extractor"] == selection.selected and row["reason"] == selection.reason.value
    assert (row["language"], row["language_score"]) == ("xx", 0.5)
    floats = {"score", "language_score"}
    assert all(value is None or isinstance(value, str) for name, value in row.items() if name not in floats)
    assert orjson.loads(orjson.dumps(row)) == row


@profile(8)
@given(batch_bytes())
def test_command_writes_the_same_bytes_every_run(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[dict[str, Any], bytes]
) -> None:
    _, data = case
    work: Path = tmp_path_factory.mktemp("cli")
    inp = work / "batch.json"
    inp.write_bytes(data)
    assert main(["select", str(inp)]) == 0
    assert main(["select", str(inp), "--output", str(work / "again.json")]) == 0
    first = (work / "batch_selected.json").read_bytes()
    assert first == (work / "again.json").read_bytes() == select_batch_bytes(data)[0]
    assert inp.read_bytes() == data
    assert sorted(p.name for p in work.iterdir()) == ["again.json", "batch.json", "batch_selected.json"]
