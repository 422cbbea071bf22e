"""Fuzz ``content-selection select`` with Hypothesis: a correct output or a clear error, nothing else.

Documents are drawn as arbitrary JSON values (recursive strategies), used as
the root, as the ``articles`` value, as articles and as extractor blocks and
text fields; they are written with random formatting (indentation, ASCII
escapes or raw UTF-8). Arbitrary bytes and mutations of valid documents
(truncated, a byte changed, a byte inserted) are fuzzed too.

For every input the command, run through its entry point
``selection_cli.main.main``, must either

* exit 0 with an output that, parsed with its key order, equals the input
  with ``selected_extractor`` set in every article (in place where it was,
  appended last otherwise) to one of the three extractors; or
* exit 65 with exactly one line on stderr, ``content-selection: error: <file>: ...``,
  and no output.

Never exit 1 ("internal error"), never a traceback, never a temporary file left.
An independent oracle says which of the two a JSON document deserves: valid
when the root is an object whose ``articles`` is a list of objects, every
integer fits 64 bits, and every string is valid Unicode (no lone surrogate).

Runs are derandomized (the same examples on every run, as CI needs) and the
number of examples per test is set explicitly; the module prints the total.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection_cli.main import main
from tests.support import examples
from tests.support.faultkit import TMP_NAME

EXTRACTORS = ("trafilatura", "newspaper4k", "readability")
FIELDS = {"trafilatura": "text", "newspaper4k": "text", "readability": "cleaned_text"}
INT64_MIN, UINT64_MAX = -(2**63), 2**64 - 1
PREFIX = "content-selection: error: "

EXAMPLES = {"root": 250, "articles": 250, "article": 300, "blocks": 350, "bytes": 300, "mutations": 300}
RUN: dict[str, int] = dict.fromkeys(EXAMPLES, 0)
OUTCOMES = {"written": 0, "refused": 0}


def fuzz_settings(name: str) -> Any:
    return settings(
        max_examples=examples(EXAMPLES[name]),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------- strategies

words = st.sampled_from(
    ["the", "cat", "sat", "on", "mat", "Ünïcode", "日本語", "&amp;", "<b>", "![i](u)", "[a](b)", "ﬁ", "Ａ"]
)
texts = st.one_of(st.text(max_size=20), st.lists(words, max_size=20).map(" ".join))
keys = st.one_of(
    st.text(max_size=8), st.sampled_from(["articles", "text", "error", "selected_extractor", "id", *EXTRACTORS])
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=INT64_MIN, max_value=UINT64_MAX),
    st.integers(),  # beyond 64 bits now and then: must be refused, not changed
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5)),
    max_leaves=10,
)
small_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)),
    max_leaves=4,
)
blocks = st.one_of(
    small_values,
    st.fixed_dictionaries(
        {},
        optional={
            "text": st.one_of(texts, small_values),
            "cleaned_text": st.one_of(texts, small_values),
            "error": st.one_of(st.none(), st.booleans(), st.sampled_from(["", " ", "timeout", 0]), small_values),
            "extra": small_values,
        },
    ),
)
articles_with_blocks = st.fixed_dictionaries(
    {},
    optional={
        "id": small_values,
        "trafilatura": blocks,
        "newspaper4k": blocks,
        "readability": blocks,
        "selected_extractor": small_values,
        "meta": small_values,
    },
)
formats = st.fixed_dictionaries({"indent": st.sampled_from([None, 0, 2, "\t"]), "ensure_ascii": st.booleans()})


def encode(doc: Any, fmt: dict[str, Any]) -> bytes:
    # surrogatepass: a lone surrogate in raw UTF-8 mode becomes invalid UTF-8, as it would on disk
    return json.dumps(doc, **fmt).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- the oracle


def _fits(value: Any) -> bool:
    """No integer beyond 64 bits and no lone surrogate anywhere (keys included)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool) or v is None or isinstance(v, float):
            continue
        if isinstance(v, int):
            if not INT64_MIN <= v <= UINT64_MAX:
                return False
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        else:
            stack.extend(v)
    return True


def deserves_output(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("articles"), list)
        and all(isinstance(a, dict) for a in doc["articles"])
        and _fits(doc)
    )


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    assert len(d) == len(pairs), f"duplicate key accepted: {pairs}"
    return d


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} accepted")


def strict_json(data: bytes) -> Any:
    """RFC 8259 JSON as Python's reader sees it, minus its leniencies (NaN, duplicate keys)."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=_unique, parse_constant=_no_constant)


def _pairs(value: Any) -> Any:
    """A value with every object turned into its list of (key, value) pairs: order counts."""
    if isinstance(value, dict):
        return [(k, _pairs(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_pairs(v) for v in value]
    return value


# --------------------------------------------------------------------------- running the command


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    # A RAM file system where there is one: thousands of fsyncs add nothing here.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-", dir=shm) as d:
        yield Path(d)


@pytest.fixture(scope="module", autouse=True)
def report_count() -> Iterator[None]:
    yield
    print(f"\nfuzz examples run: {sum(RUN.values())} {RUN}; outcomes {OUTCOMES}")


def run_cli(workdir: Path, data: bytes) -> tuple[int, str, bytes | None]:
    inp, out = workdir / "fuzz_extracted.json", workdir / "fuzz_selected.json"
    inp.write_bytes(data)
    out.unlink(missing_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["select", str(inp), "--output", str(out)])
    assert inp.read_bytes() == data, "the input changed"
    assert not [n for n in os.listdir(workdir) if TMP_NAME.match(n)], "a temporary file was left"
    OUTCOMES["written" if status == 0 else "refused"] += 1
    return status, err.getvalue(), out.read_bytes() if out.exists() else None


def assert_clean_error(status: int, stderr: str, output: bytes | None) -> None:
    lines = stderr.splitlines()
    assert status == 65, f"status {status}: {stderr}"
    assert len(lines) == 1 and lines[0].startswith(PREFIX) and "fuzz_extracted.json" in lines[0], stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert output is None


def assert_correct_output(doc: dict[str, Any], status: int, stderr: str, output: bytes | None) -> None:
    assert status == 0, stderr
    assert output is not None and output.endswith(b"\n")
    got = json.loads(output, object_pairs_hook=lambda pairs: pairs)
    chosen = [dict(a).get("selected_extractor") for a in dict(got)["articles"]]
    assert all(c in EXTRACTORS for c in chosen), chosen
    expected = json.loads(json.dumps(doc))  # the values a JSON reader sees (e.g. -0.0 stays a float)
    for article, name in zip(expected["articles"], chosen, strict=True):
        article["selected_extractor"] = name
    assert got == _pairs(expected)


def check_document(workdir: Path, doc: Any, fmt: dict[str, Any]) -> None:
    status, stderr, output = run_cli(workdir, encode(doc, fmt))
    if deserves_output(doc):
        assert_correct_output(doc, status, stderr, output)
    else:
        assert_clean_error(status, stderr, output)


# --------------------------------------------------------------------------- the fuzz tests


@fuzz_settings("root")
@given(doc=json_values, fmt=formats)
def test_any_json_document_as_the_root(workdir: Path, doc: Any, fmt: dict[str, Any]) -> None:
    RUN["root"] += 1
    check_document(workdir, doc, fmt)


@fuzz_settings("articles")
@given(
    articles=json_values,
    meta=st.dictionaries(keys.filter(lambda k: k != "articles"), json_values, max_size=3),
    fmt=formats,
)
def test_any_json_value_as_articles(workdir: Path, articles: Any, meta: dict[str, Any], fmt: dict[str, Any]) -> None:
    RUN["articles"] += 1
    check_document(workdir, {**meta, "articles": articles}, fmt)


@fuzz_settings("article")
@given(articles=st.lists(json_values, max_size=5), fmt=formats)
def test_any_json_values_as_articles_items(workdir: Path, articles: list[Any], fmt: dict[str, Any]) -> None:
    RUN["article"] += 1
    check_document(workdir, {"articles": articles}, fmt)


@fuzz_settings("blocks")
@given(articles=st.lists(articles_with_blocks, max_size=4), fmt=formats)
def test_any_json_values_as_blocks_and_fields(
    workdir: Path, articles: list[dict[str, Any]], fmt: dict[str, Any]
) -> None:
    RUN["blocks"] += 1
    check_document(workdir, {"articles": articles}, fmt)


@fuzz_settings("bytes")
@given(data=st.one_of(st.binary(max_size=200), st.binary(max_size=40).map(lambda b: b'{"articles": [' + b)))
def test_arbitrary_bytes(workdir: Path, data: bytes) -> None:
    RUN["bytes"] += 1
    status, stderr, output = run_cli(workdir, data)
    if status == 0:  # rare: the bytes happen to be a valid batch
        assert output is not None
        assert len(orjson.loads(output)["articles"]) == len(orjson.loads(data)["articles"])
    else:
        assert_clean_error(status, stderr, output)


@fuzz_settings("mutations")
@given(
    articles=st.lists(articles_with_blocks, min_size=1, max_size=3),
    fmt=formats,
    how=st.sampled_from(["cut", "flip", "insert"]),
    where=st.floats(0, 1),
    byte=st.integers(0, 255),
)
def test_mutated_valid_documents(
    workdir: Path, articles: list[dict[str, Any]], fmt: dict[str, Any], how: str, where: float, byte: int
) -> None:
    RUN["mutations"] += 1
    data = encode({"articles": articles}, fmt)
    i = min(int(where * len(data)), len(data) - 1)
    mutated = {
        "cut": data[:i],
        "flip": data[:i] + bytes([byte]) + data[i + 1 :],
        "insert": data[:i] + bytes([byte]) + data[i:],
    }[how]
    status, stderr, output = run_cli(workdir, mutated)
    if status == 0:  # the mutation kept it valid (a changed letter, an added space...)
        assert output is not None
        reparsed = strict_json(mutated)
        assert deserves_output(reparsed)
        assert_correct_output(reparsed, status, stderr, output)
    else:
        assert_clean_error(status, stderr, output)
