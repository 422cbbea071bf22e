"""JSON Lines batches (``selection_core.jsonl``): every refusal with its line, and the same rules as JSON.

Each refusal is pinned with its exact message. Hypothesis checks that rendering
then parsing gives the articles back, that a file cut into runs anywhere between
lines parses (or is refused) exactly as the whole file, and that an article is
accepted in a JSON Lines file exactly when it is accepted in a JSON batch.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selection_core as sc
from selection_core.batch import MAX_DEPTH
from selection_core.jsonl import parse_lines, render_lines
from tests.support import ROOT, examples

GOLDEN = ROOT / "tests" / "data" / "aeb_batch_extracted.json"
SOURCE = "inbox/crawl_extracted.jsonl"
BLANK = "remove it (a JSON Lines batch has one article on every line, and may end with one newline)"
NOT_AN_ARTICLE = "every line must be one article, a JSON object"


def refused(data: bytes, first_line: int = 1, first_offset: int = 0) -> str:
    """The one-line message ``parse_lines`` refuses ``data`` with."""
    with pytest.raises(sc.InvalidBatchError) as info:
        parse_lines(data, SOURCE, first_line, first_offset)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert message.startswith(f"{SOURCE}: ")
    return message[len(SOURCE) + 2 :]


def outcome(call: Any) -> Any:
    """What a parse gives: its result, or the message it refuses with."""
    try:
        return call()
    except sc.InvalidBatchError as exc:
        return ("refused", str(exc))


# --------------------------------------------------------------------------- accepted


@pytest.mark.parametrize(
    "data, articles",
    [
        pytest.param(b"", [], id="empty-file-is-an-empty-batch"),
        pytest.param(b'{"id": "a"}\n', [{"id": "a"}], id="one-line"),
        pytest.param(b'{"id": "a"}', [{"id": "a"}], id="last-line-without-newline"),
        pytest.param(b'{"id": "a"}\r\n{"id": "b"}\r\n', [{"id": "a"}, {"id": "b"}], id="crlf"),
        pytest.param(b' \t{"id": "a"} \r\n{}', [{"id": "a"}, {}], id="whitespace-around-the-object"),
        pytest.param(b'{"t": "a,b\\n{}"}\n{}\n', [{"t": "a,b\n{}"}, {}], id="escaped-newline-in-a-string"),
        pytest.param(b'{"n": 1.5, "m": [0.1, -0.0]}\n', [{"n": 1.5, "m": [0.1, -0.0]}], id="exact-floats"),
        pytest.param(
            b'{"n": 18446744073709551615, "m": -9223372036854775808}\n',
            [{"n": 18446744073709551615, "m": -9223372036854775808}],
            id="64-bit-limits",
        ),
    ],
)
def test_accepted(data: bytes, articles: list[dict[str, Any]]) -> None:
    assert parse_lines(data, SOURCE) == articles


# --------------------------------------------------------------------------- refused, with the line


@pytest.mark.parametrize(
    "data, message",
    [
        pytest.param(b"\n", f"line 1 is blank; {BLANK}", id="only-a-newline"),
        pytest.param(b'{"a": 1}\n\n', f"line 2 is blank; {BLANK}", id="two-final-newlines"),
        pytest.param(b'{"a": 1}\n \t\r\n{"b": 2}\n', f"line 2 is blank; {BLANK}", id="blank-line-inside"),
        pytest.param(b'{"a": 1}\n  ', f"line 2 is blank; {BLANK}", id="spaces-after-the-last-newline"),
        pytest.param(
            b'\xef\xbb\xbf{"a": 1}\n',
            "starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM",
            id="bom",
        ),
        pytest.param('{"a": 1}\n'.encode("utf-16"), "looks like UTF-16, not UTF-8; convert it to UTF-8", id="utf-16"),
        pytest.param(
            b'{"a": 1}\n{"t": "caf\xe9"}\n',
            "line 2 is not valid UTF-8 at byte offset 19; save it as UTF-8",
            id="latin-1-byte",
        ),
        pytest.param(
            b'{}\n{}\n{"a": 1,}\n',
            "line 3 is not valid JSON at byte offset 13: trailing comma is not allowed; fix the JSON syntax",
            id="syntax",
        ),
        pytest.param(
            b'{}\n{"n": NaN}\n',
            "line 2 is not valid JSON at byte offset 9: unexpected character, expected a JSON "
            "value; fix the JSON syntax",
            id="nan",
        ),
        pytest.param(
            b'{}\n{"n": 1e400}\n',
            "line 2 is not valid JSON at byte offset 9: number is infinity when parsed as "
            "double; a number is too large for a 64-bit float: store it as a string",
            id="infinity",
        ),
        pytest.param(
            b'{"a": [1,\n2]}\n',
            "line 1 ends inside its article, at column 10; write each article whole on one line "
            "(a JSON Lines batch is not indented)",
            id="indented-article",
        ),
        pytest.param(b'{}\n{}\n[{"a": 1}]\n', f"line 3 is an array; {NOT_AN_ARTICLE}", id="array"),
        pytest.param(b'{}\n"text"\n', f"line 2 is a string; {NOT_AN_ARTICLE}", id="string"),
        pytest.param(b"{}\nnull\n", f"line 2 is null; {NOT_AN_ARTICLE}", id="null"),
        pytest.param(b"7\n", f"line 1 is a number; {NOT_AN_ARTICLE}", id="number"),
        pytest.param(
            b'{}\n{"a": 1} {"b": 2}\n',
            "line 2 has more after its article, at column 10; put each article on a line of its own",
            id="two-objects",
        ),
        pytest.param(
            b'{}\n{"a": 1},{"b": 2}\n',
            "line 2 has more after its article, at column 9; put each article on a line of its own",
            id="two-objects-with-a-comma",
        ),
        # as many values as lines, every one an object, but not one per line: the scan notices
        pytest.param(
            b'{"a": [{"x": 1}\n{"y": 2}]}\n{},{}\n',
            "line 1 ends inside its article, at column 16; write each article whole on one line "
            "(a JSON Lines batch is not indented)",
            id="values-across-lines",
        ),
        pytest.param(
            b'{}\n{"block": {"text": "a", "text": "b"}}\n',
            'line 2: $.block has the key "text" more than once, so one of its values would be lost; '
            "remove or rename the duplicate",
            id="duplicate-key",
        ),
        pytest.param(
            b'{"id": 1, "id": 1}\n',
            'line 1: $ has the key "id" more than once, so one of its values would be lost; '
            "remove or rename the duplicate",
            id="duplicate-key-of-the-article",
        ),
        pytest.param(
            b'{}\n{}\n{"m": {"a b": [123456789012345678901234567890]}}\n',
            'line 3: $.m["a b"][0] is an integer beyond 64 bits (123456789012345678901234567890...), which cannot '
            "be kept exactly; store it as a string",
            id="big-int",
        ),
        pytest.param(
            b'{"n": 1e-400}\n',
            "line 1: $.n is the number 1e-400, which a 64-bit float cannot hold exactly (it would be written as "
            "0.0); store it as a string",
            id="inexact-float",
        ),
        pytest.param(
            b'{}\n{"x": ' + b"[" * 252 + b"]" * 252 + b"}\n",
            f"line 2: $.x is nested more than {MAX_DEPTH} levels deep, more than can be written back exactly; "
            "flatten that value",
            id="too-deep",
        ),
    ],
)
def test_refused_with_the_line_and_the_fix(data: bytes, message: str) -> None:
    assert refused(data) == message


def test_the_first_bad_line_is_the_one_named() -> None:
    data = b'{}\n{"n": 123456789012345678901234567890}\n[]\n\n'
    assert refused(data).startswith("line 2: $.n is an integer beyond 64 bits")


def test_a_chunk_names_lines_and_bytes_of_the_file() -> None:
    # A chunk that starts at line 41, byte 5000 of the file: numbers are the file's, not the chunk's.
    assert refused(b'{}\n{"t": "\xff"}\n', 41, 5000) == (
        "line 42 is not valid UTF-8 at byte offset 5010; save it as UTF-8"
    )
    assert refused(b"{}\n[]\n", 41, 5000) == f"line 42 is an array; {NOT_AN_ARTICLE}"


def test_a_byte_order_mark_counts_only_at_the_start_of_the_file() -> None:
    # Inside the file (a chunk after the first), the mark is a JSON error of its line.
    assert refused(b'\xef\xbb\xbf{"a": 1}\n', 3, 120).startswith("line 3 is not valid JSON at byte offset 120")


def test_depth_is_counted_as_for_an_article_in_a_batch() -> None:
    """The deepest article a JSON batch accepts, a JSON Lines file accepts; one level more, neither."""
    for depth, accepted in ((251, True), (252, False)):
        article = b'{"x": ' + b"[" * depth + b"]" * depth + b"}"
        in_json = outcome(lambda a=article: sc.parse_batch(b'{"articles": [' + a + b"]}")["articles"])
        in_lines = outcome(lambda a=article: parse_lines(a + b"\n"))
        assert (in_json == in_lines) is accepted
        assert isinstance(in_lines, list) is accepted and isinstance(in_json, list) is accepted


# --------------------------------------------------------------------------- rendering


def test_render_lines_writes_one_compact_line_per_article() -> None:
    articles = [{"id": "é", "t": "a\nb", "n": [1, 2.5, None]}, {}]
    assert render_lines(articles) == b'{"id":"\xc3\xa9","t":"a\\nb","n":[1,2.5,null]}\n{}\n'
    assert render_lines([]) == b""


def test_the_real_batch_round_trips_as_lines() -> None:
    articles = sc.parse_batch(GOLDEN.read_bytes())["articles"]
    data = render_lines(articles)
    assert data.count(b"\n") == len(articles) == 181
    assert parse_lines(data, SOURCE) == articles
    assert render_lines(parse_lines(data)) == data  # idempotent


def test_what_is_not_kept_byte_for_byte() -> None:
    # Spacing, number and string spelling, line endings and the missing final newline; never a value.
    data = b'{ "n" : 1.0E2 , "s" : "\\u00e9\\/" }\r\n{"k": [ ]}'
    assert render_lines(parse_lines(data)) == b'{"n":100.0,"s":"\xc3\xa9/"}\n{"k":[]}\n'


# --------------------------------------------------------------------------- properties

_KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=12
)
ARTICLES = st.lists(st.dictionaries(_KEYS, _VALUES, max_size=5), max_size=8)

#: Lines that are refused, each for a different rule.
BAD_LINES = [
    b"",
    b"  \r",
    b"[1]",
    b'"x"',
    b'{"a": 1} {}',
    b'{"a": 1,}',
    b'{"t": "\xe9"}',
    b'{"a": {"k": 1, "k": 2}}',
    b'{"n": 99999999999999999999999}',
    b'{"n": 1.00000000000000000001}',
    b'{"a": [1',
    b'{"x": ' + b"[" * 252 + b"]" * 252 + b"}",
]


def _lines(articles: list[dict[str, Any]], crlf: bool) -> list[bytes]:
    return [orjson.dumps(a) + (b"\r\n" if crlf else b"\n") for a in articles]


@settings(max_examples=examples(100), deadline=None)
@given(ARTICLES)
def test_render_then_parse_gives_the_articles_back(articles: list[dict[str, Any]]) -> None:
    data = render_lines(articles)
    assert parse_lines(data) == articles
    assert render_lines(parse_lines(data)) == data


@settings(max_examples=examples(100), deadline=None)
@given(
    ARTICLES,
    st.booleans(),
    st.none() | st.tuples(st.integers(0, 8), st.sampled_from(BAD_LINES)),
    st.booleans(),
    st.lists(st.integers(0, 20), max_size=4),
)
def test_runs_cut_anywhere_between_lines_parse_as_the_whole(
    articles: list[dict[str, Any]],
    crlf: bool,
    bad: tuple[int, bytes] | None,
    final_newline: bool,
    cuts: list[int],
) -> None:
    lines = _lines(articles, crlf)
    if bad is not None:
        at, line = bad
        lines.insert(min(at, len(lines)), line + b"\n")
    if lines and not final_newline:
        lines[-1] = lines[-1].rstrip(b"\n")
    data = b"".join(lines)
    whole = outcome(lambda: parse_lines(data, SOURCE))
    bounds = sorted({min(c, len(lines)) for c in cuts} | {0, len(lines)})

    def by_runs() -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        for begin, end in zip(bounds, bounds[1:]):
            offset = sum(len(x) for x in lines[:begin])
            got += parse_lines(b"".join(lines[begin:end]), SOURCE, begin + 1, offset)
        return got

    assert outcome(by_runs) == whole
    if bad is None:
        assert whole == articles


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from(BAD_LINES[2:]) | ARTICLES.map(lambda a: orjson.dumps(a[0] if a else {})))
def test_json_and_json_lines_accept_and_refuse_the_same_articles(article: bytes) -> None:
    in_json = outcome(lambda: sc.parse_batch(b'{"articles": [' + article + b"]}", SOURCE)["articles"])
    in_lines = outcome(lambda: parse_lines(article + b"\n", SOURCE))
    assert isinstance(in_json, list) == isinstance(in_lines, list), (in_json, in_lines)
    if isinstance(in_json, list):
        assert in_json == in_lines
