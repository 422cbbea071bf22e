"""The whole file's refusal computed one run at a time (:mod:`selection_storage.refusal`).

The oracle is ``parse_batch`` on the whole document: for every batch whose layout
scan succeeds, cut into runs of any size, :func:`whole_file_refusal` raises its
message byte for byte, or returns None where it accepts the document.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import selection_core as sc
import selection_core.batch
import selection_storage.files
import selection_storage.refusal
from selection_core.layout import runs_of, scan_layout
from selection_storage import FileIdentity, InputChangedError, whole_file_refusal
from selection_storage.refusal import GAP_BLOCK, ORJSON_BUFFER_FULL
from tests.support import ROOT
from tests.support.faultkit import load_bad_corpus_script

PROFILE = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


# ------------------------------------------------------------------ documents with raw pieces


@dataclass(frozen=True)
class Raw:
    """JSON text written as is: how a problem gets into a document."""

    text: bytes


class Obj(list):  # type: ignore[type-arg]
    """An object as its (key, value) pairs, so that a key may repeat or be raw."""


@dataclass(frozen=True)
class Style:
    """How a document is written: separators, colon, and the newline of an indented layout (None: one line)."""

    comma: bytes
    colon: bytes
    newline: bytes | None = None


STYLES = (
    Style(b",", b":"),
    Style(b", ", b": "),
    Style(b",", b": ", b"\n"),
    Style(b",", b" : ", b"\r\n"),  # a space before the colon: the exact key count
    Style(b" ,\t", b"\t:", None),
)


def dump(value: Any, style: Style, level: int = 0) -> bytes:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Obj):
        parts = [
            dump(k if isinstance(k, Raw) else str(k), style) + style.colon + dump(v, style, level + 1) for k, v in value
        ]
        return _wrap(b"{", b"}", parts, style, level)
    if isinstance(value, list):
        return _wrap(b"[", b"]", [dump(v, style, level + 1) for v in value], style, level)
    return json.dumps(value, ensure_ascii=False).encode()


def _wrap(opening: bytes, closing: bytes, parts: list[bytes], style: Style, level: int) -> bytes:
    if not parts:
        return opening + closing
    if style.newline is not None:
        inner = style.newline + b"  " * (level + 1)
        return opening + inner + (style.comma + inner).join(parts) + style.newline + b"  " * level + closing
    return opening + style.comma.join(parts) + closing


TEXT = st.text(st.sampled_from('ab z:\t"\\é€😀\u2028'), max_size=6)
KEYS = st.sampled_from(["a", "b", "text", "é", "k😀", "run", 'q"', ":c"])
LEAVES = st.one_of(
    TEXT,
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(st.tuples(KEYS, inner), max_size=3, unique_by=lambda kv: kv[0]).map(Obj)
    ),
    max_leaves=8,
)
ARTICLES = st.lists(st.tuples(KEYS, VALUES), max_size=3, unique_by=lambda kv: kv[0]).map(Obj)
ENVELOPE_KEYS = st.lists(
    st.tuples(st.sampled_from(["run", "meta", "é", "z😀"]), VALUES), max_size=2, unique_by=lambda kv: kv[0]
)

SYNTAX = [
    b"tru", b"nul", b"fals", b"truex", b"1.", b"-", b"01", b"1.e5", b"'a'", b"NaN", b"Infinity", b"-Infinity",
    b'{"a" 1}', b"[1 2]", b'{"a":1,}', b"[1,]", b'{"a":1 "b":2}', b"{1:2}", b'"a\x01b"', b'"\\x"', b'"\\u12"',
    b'{"n": [1, {"m": tru}]}', b'[\n  1,\n  fals\n]',
]  # fmt: skip
INVALID_UTF8 = [b'"\xff"', b'"caf\xc3"', b'"\xed\xa0\x80"', b"\xff", b'"\xc3\xa9\xe2\x82"', b'"\xc3\xa9\xf0\x9f"']
SURROGATES = [b'"\\ud800"', b'"\\udc00"', b'"x\\ud800\\u0041"', b'"\\ud83d\\ude00\\ud83d"']
INFINITE = [b"1e400", b"-1e400", b"1.5e999"]
BIG_INTEGERS = [b"18446744073709551616", b"-9223372036854775809", b"123456789012345678901234567890"]
INEXACT = [b"1e-400", b"0.1000000000000000055511151231257827", b"3.141592653589793238462643383279", b"5e-324"]
NOT_OBJECTS = [b"1", b'"s"', b"[]", b"null", b"true"]
BAD_KEYS = [b'"k\x01"', b'"\xff"', b'"\\ud800"', b'"\\u00e9"']

# One class of problem as likely as another, whatever the number of examples of each.
PROBLEMS = st.one_of(
    *(
        st.sampled_from(examples).map(lambda b: ("raw", b))
        for examples in (SYNTAX, INVALID_UTF8, SURROGATES, INFINITE, BIG_INTEGERS, INEXACT, NOT_OBJECTS)
    ),
    st.tuples(st.just("deep"), st.integers(245, 1100), st.booleans()),
    st.tuples(st.just("duplicate")),
    st.tuples(st.just("key"), st.sampled_from(BAD_KEYS)),
)


def _slots(value: Any) -> Iterator[tuple[list[Any], int]]:
    """Every place a value lies below ``value``: (its container, its index), in document order."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield value, i
            yield from _slots(item[1] if isinstance(value, Obj) else item)


def _objects(value: Any) -> Iterator[Obj]:
    if isinstance(value, Obj):
        yield value
    if isinstance(value, list):
        for item in value:
            yield from _objects(item[1] if isinstance(value, Obj) else item)


def _inject(root: Obj, problem: tuple[Any, ...], where: int) -> None:
    kind = problem[0]
    if kind in ("raw", "deep"):
        if kind == "raw":
            raw = Raw(problem[1])
        else:
            n = problem[1]
            raw = Raw(b"[" * n + b"]" * n if problem[2] else b'{"d":' * n + b"0" + b"}" * n)
        slots = list(_slots(root))
        container, i = slots[where % len(slots)]
        if isinstance(container, Obj):
            container[i] = (container[i][0], raw)
        else:
            container[i] = raw
        return
    objects = [o for o in _objects(root) if o]
    target = objects[where % len(objects)]
    if kind == "duplicate":
        key, _ = target[where % len(target)]
        target.insert(where % (len(target) + 1), (key, 1))
    else:
        target.insert(where % (len(target) + 1), (Raw(problem[1]), 2))


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    before = draw(ENVELOPE_KEYS)
    after = draw(ENVELOPE_KEYS)
    articles = draw(st.lists(ARTICLES, max_size=7))
    root = Obj([*before, ("articles", articles), *after])
    for problem in draw(st.lists(PROBLEMS, max_size=3)):
        _inject(root, problem, draw(st.integers(0, 1000)))
    space = st.sampled_from([b"", b" ", b"\n", b"\r\n\t"])
    return draw(space) + dump(root, draw(st.sampled_from(STYLES))) + draw(space)


# ------------------------------------------------------------------ the oracle


def _written(folder: Path, data: bytes) -> tuple[Path, FileIdentity]:
    path = folder / "batch_extracted.json"
    path.write_bytes(data)
    return path, FileIdentity.of(os.stat(path))


def expected_message(data: bytes, path: Path) -> str | None:
    try:
        sc.parse_batch(data, str(path))
    except sc.InvalidBatchError as exc:
        return str(exc)
    return None


def refusal_message(path: Path, identity: FileIdentity, data: bytes, run_size: int) -> str | None:
    layout = scan_layout(data)
    assert layout is not None
    try:
        whole_file_refusal(path, identity, runs_of(layout, run_size))
    except sc.InvalidBatchError as exc:
        return str(exc)
    return None


@PROFILE
@given(data=batches(), run_size=st.integers(1, 8))
def test_refusal_is_the_whole_documents(data: bytes, run_size: int) -> None:
    assume(scan_layout(data) is not None)
    with tempfile.TemporaryDirectory() as folder:
        path, identity = _written(Path(folder), data)
        expected = expected_message(data, path)
        assume(expected is None or ORJSON_BUFFER_FULL not in expected)  # see the test below
        assert refusal_message(path, identity, data, run_size) == expected


def test_orjson_running_out_of_its_buffer_is_not_the_refusal(tmp_path: Path) -> None:
    """The one known difference (module docstring of ``selection_storage.refusal``).

    A valid batch, indented (``{`` and two spaces), with many empty brackets:
    orjson's whole-document parse runs out of the buffer it sized from the
    length, which says nothing about the input; run by run it is valid.
    """
    article = b'{"":' + b"[" * 20 + b"]" * 20 + b"}"
    data = b'{  "articles":[' + b",".join([article] * 1000) + b"]}"
    path, identity = _written(tmp_path, data)
    whole = expected_message(data, path)
    assert whole is None or ORJSON_BUFFER_FULL in whole  # None: a later orjson sizes it better
    assert refusal_message(path, identity, data, 100) is None
    bad = data.replace(b'{"":', b'{"": tru, "x":', 1)  # the input's own first error, at its place
    path, identity = _written(tmp_path, bad)
    assert refusal_message(path, identity, bad, 100) == expected_message(bad, path)


def test_an_envelope_denser_than_its_document_is_parsed_as_in_the_document(tmp_path: Path) -> None:
    """Cut out of its document, a dense envelope alone would run out of orjson's buffer."""
    dense = b"[" + b",".join([b"[" * 20 + b"]" * 20] * 300) + b"]"
    head = b'{\n  "m": ' + dense + b',\n  "articles": ['
    data = head + b'{"t": "' + b"x" * 200_000 + b'"}, {"u": tru}]\n}'
    with pytest.raises(orjson.JSONDecodeError, match=ORJSON_BUFFER_FULL):
        orjson.loads(head + b"]\n}")  # the envelope, alone
    path, identity = _written(tmp_path, data)
    assert "line 3" in (refusal_message(path, identity, data, 1) or "")
    assert refusal_message(path, identity, data, 1) == expected_message(data, path)


# ------------------------------------------------------------------ cases by name


CASES = [
    pytest.param(b'{"articles": [{"a": 1}, {"b": [2]}], "run": 7}\n', id="valid"),
    pytest.param(b'{"articles": []}', id="no-articles"),
    pytest.param(b'{"articles": [ \n ]}', id="no-articles-newline"),
    pytest.param(b'{"articles": [{"a": tru}, {"b": "\xff"}]}', id="utf8-beats-earlier-syntax"),
    pytest.param(b'{"x": tru, "articles": [{"a": 1}], "y": "\xff"}', id="utf8-after-beats-envelope-syntax"),
    pytest.param(
        b'{"articles": [{"a": 1},\n {"\xc3\xa9": "\xf0\x9f\x98\x80", "b": tru}]}', id="syntax-chars-later-line"
    ),
    pytest.param(b'{"articles": [{"\xc3\xa9": "\xf0\x9f\x98\x80"}, {"b": tru}]}', id="syntax-chars-line-1"),
    pytest.param(b'{"articles": [{"a": 1}],\n "\xc3\xa9": 1.}', id="syntax-after-articles"),
    pytest.param(b'{"articles": [1, {"a": tru}]}', id="syntax-beats-earlier-non-object"),
    pytest.param(b'{"articles": [{"a": 1}, 2, [3]]}', id="first-non-object"),
    pytest.param(b'{"articles": [{"a": ' + b"[" * 300 + b"]" * 300 + b"}, 5]}", id="non-object-beats-depth"),
    pytest.param(
        b'{"p": ' + b"[" * 300 + b"]" * 300 + b', "articles": [{"a": ' + b"[" * 300 + b"]" * 300 + b"}]}",
        id="depth-article-beats-key-before",
    ),
    pytest.param(
        b'{"articles": [{"a": ' + b"[" * 300 + b"]" * 300 + b'}, {"b": ' + b"[" * 300 + b"]" * 300 + b"}]}",
        id="depth-last-article",
    ),
    pytest.param(
        b'{"articles": [{"a": ' + b"[" * 300 + b"]" * 300 + b'}], "q": ' + b"[" * 300 + b"]" * 300 + b"}",
        id="depth-key-after-beats-article",
    ),
    pytest.param(b'{"articles": [{"a": 1, "a": 2}], "r": 1e-400}', id="exact-document-order"),
    pytest.param(b'{"r": 1, "articles": [{"a": 1e-400}], "r": 2}', id="exact-root-duplicate-first"),
    pytest.param(b'{"articles": [{"a": 1}, {"n": 18446744073709551616}]}', id="exact-big-int"),
    pytest.param(b'{"articles": [{"a": 0.5}], "x": 1e400}', id="infinity-after"),
    pytest.param(b'{"articles": [ \n\n ],\n  "x": tru}', id="no-articles-syntax-after"),
    pytest.param(b'{"\\u0061rticles": [{"a": 1}, 7], "x": 1}', id="articles-key-escaped"),
    pytest.param(b'{"articles":[{"a":1}   ,\n\n   {"b":1} , {"c":tru}]}', id="wide-separators"),
    pytest.param(b'\r\n {"articles": [{"a": 1}],\r\n "b": [1 2]} \n', id="crlf-and-outer-space"),
]


@pytest.mark.parametrize("data", CASES)
@pytest.mark.parametrize("run_size", [1, 2, 100])
@pytest.mark.parametrize("gap_block", [GAP_BLOCK, 2], ids=["gap-block", "gap-2-bytes"])
def test_named_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, run_size: int, gap_block: int
) -> None:
    assert scan_layout(data) is not None
    monkeypatch.setattr(selection_storage.refusal, "GAP_BLOCK", gap_block)
    path, identity = _written(tmp_path, data)
    assert refusal_message(path, identity, data, run_size) == expected_message(data, path)


def test_valid_document_returns_none(tmp_path: Path) -> None:
    data = b'{"run": 1.5, "articles": [{"a": 0.25}, {"b": "\xc3\xa9"}]}'
    path, identity = _written(tmp_path, data)
    assert refusal_message(path, identity, data, 1) is None


def test_never_reads_or_parses_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The envelope, each run once, and the separators between them: nothing reads or parses the whole file."""
    articles = [{"a": "x" * 200, "n": i} for i in range(40)]
    data = json.dumps({"run": 7, "articles": articles, "end": 1}, indent=2).encode()
    data = data.replace(b'"n": 39', b'"n": 39, "n": 40')  # a duplicate key, found only by the exact check
    path, identity = _written(tmp_path, data)
    layout = runs_of(scan_layout(data), 4)  # type: ignore[arg-type]

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the whole file was read or parsed")

    reads: list[tuple[int, int]] = []
    real_read_span = selection_storage.files.read_span

    def spy(path: Path, identity: FileIdentity, start: int, end: int, *rest: bytes) -> bytearray:
        reads.append((start, end))
        return real_read_span(path, identity, start, end, *rest)

    monkeypatch.setattr(selection_storage.files, "read_input", forbidden)
    monkeypatch.setattr(selection_core.batch, "parse_batch", forbidden)
    monkeypatch.setattr(sc, "parse_batch", forbidden)
    monkeypatch.setattr(selection_storage.refusal, "read_span", spy)
    with pytest.raises(sc.InvalidBatchError) as caught:
        whole_file_refusal(path, identity, layout)
    monkeypatch.undo()
    assert str(caught.value) == expected_message(data, path)
    runs = [(run.begin, run.end) for run in layout.runs]
    assert [span for span in reads if span in runs] == runs  # each run once, in order
    gaps = [(a.end, b.begin) for a, b in zip(layout.runs, layout.runs[1:], strict=False)]
    envelope = [(0, layout.open + 1), (layout.close, len(data))]
    head_gap, tail_gap = (layout.open + 1, runs[0][0]), (runs[-1][1], layout.close)
    assert sorted(reads) == sorted([*envelope, head_gap, *runs, *gaps, tail_gap])
    assert max(end - start for start, end in reads) < len(data) // 4


def test_a_file_changed_since_the_plan_is_not_refused_as_invalid(tmp_path: Path) -> None:
    data = b'{"articles": [{"a": 1}, {"b": tru}]}'
    path, identity = _written(tmp_path, data)
    layout = runs_of(scan_layout(data), 1)  # type: ignore[arg-type]
    path.write_bytes(data + b" ")
    with pytest.raises(InputChangedError):
        whole_file_refusal(path, identity, layout)


BAD_DIR = ROOT / "tests" / "data" / "bad"
FILE_CASES = [
    case
    for case in json.loads((BAD_DIR / "cases.json").read_text(encoding="utf-8"))["cases"]
    if case["kind"] in ("file", "generated")
]


@pytest.mark.parametrize("case", FILE_CASES, ids=[case["id"] for case in FILE_CASES])
def test_the_hostile_input_corpus(tmp_path: Path, case: dict[str, Any]) -> None:
    """Every case of ``tests/data/bad`` that the layout scan delimits (the others are out of scope)."""
    if case["kind"] == "generated":
        data = load_bad_corpus_script().generated_bytes(case["id"])
    else:
        data = (BAD_DIR / case["file"]).read_bytes()
    if scan_layout(data) is None:
        pytest.skip("the layout scan gives up: the whole document is parsed instead")
    path, identity = _written(tmp_path, data)
    for run_size in (1, 3):
        assert refusal_message(path, identity, data, run_size) == expected_message(data, path)
