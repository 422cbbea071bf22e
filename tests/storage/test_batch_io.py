"""Batch documents and files: validation, exact round trips, atomic writes, reports.

Validation goes through ``parse_batch`` (pure, bytes in) and, for what a user
sees, through the real command ``selection_cli.main.main`` on files in
``tmp_path``. Faults of the machine (full disk, I/O error) are injected with
pytest-mock; everything else is real.
"""

from __future__ import annotations

import errno
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from selection_cli.main import main
from selection_core import (
    EXIT_INVALID_INPUT,
    EXIT_IO_ERROR,
    EXTRACTORS,
    InvalidBatchError,
    WriteError,
    parse_batch,
    select_article,
    select_batch_bytes,
)
from selection_core.evidence import report_entry
from selection_engine import select_file

SOURCE = "inbox/batch_extracted.json"
TEXT = "The council voted on Tuesday to extend the tram line to the northern suburbs."


def refused(data: bytes) -> str:
    """The one-line message ``parse_batch`` refuses ``data`` with."""
    with pytest.raises(InvalidBatchError) as info:
        parse_batch(data, SOURCE)
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    assert message.startswith(f"{SOURCE}: ")
    return message


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(err: str, *fragments: str) -> None:
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "data, place",
    [
        pytest.param(b"", "empty", id="empty-file"),
        pytest.param(b"   \n", "byte offset 0", id="whitespace-only"),
        pytest.param(b'{"articles": [}', "byte offset 14", id="syntax-position"),
        pytest.param(b'{\n  "articles": [\n    {"a": 1},\n    {"a": 2,}\n  ]\n}', "byte offset 43", id="syntax-line"),
        pytest.param(b"[]", "root", id="root-array"),
        pytest.param(b"42", "root", id="root-number"),
        pytest.param(b'{"article": []}', '"articles"', id="articles-missing"),
        pytest.param(b'{"articles": {}}', "$.articles", id="articles-object"),
        pytest.param(b'{"articles": [{}, {}, {}, null]}', "$.articles[3]", id="article-null"),
        pytest.param(b'{"articles": [{}, {}, {}, [{}]]}', "$.articles[3]", id="article-array"),
        pytest.param(b'{"articles": [{}, "text"]}', "$.articles[1]", id="article-string"),
        pytest.param(b'{"articles": [{"t": "caf\xe9"}]}', "UTF-8", id="latin-1-bytes"),
        pytest.param(b'{"articles": [{"t": "\xed\xa0\x80"}]}', "UTF-8", id="encoded-surrogate"),
        pytest.param('{"articles": []}'.encode("utf-16"), "UTF-16", id="utf-16"),
        pytest.param(b'{"articles": []} {}', "byte offset 17", id="trailing-data"),
    ],
)
def test_invalid_batch_message_names_file_and_place(data: bytes, place: str) -> None:
    assert place in refused(data)


@pytest.mark.parametrize(
    "data, place",
    [
        pytest.param(b'{"articles": [{}, {}, {}, 7]}', "$.articles[3]", id="article-not-object"),
        pytest.param(b'{"articles": "x"}', "$.articles", id="articles-not-list"),
        pytest.param(b"\xef\xbb\xbf{}", "BOM", id="bom"),
        pytest.param(b'{"articles": [{"n": 123456789012345678901234567890}]}', "$.articles[0].n", id="big-int"),
        pytest.param(b'{"articles": [{"a": {"x": 1, "x": 2}}]}', "$.articles[0].a", id="duplicate-key"),
        pytest.param(b'{"articles": [NaN]}', "byte offset 14", id="nan"),
    ],
)
def test_command_refuses_invalid_input_in_one_line(
    data: bytes, place: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inp = tmp_path / "batch.json"
    inp.write_bytes(data)
    code, out, err = run(["select", str(inp), "--report", str(tmp_path / "r.jsonl")], capsys)
    assert code == EXIT_INVALID_INPUT
    assert out == ""
    assert_one_line_error(err, str(inp), place)
    assert names(tmp_path) == ["batch.json"]


def test_bom_is_refused_and_says_how_to_fix() -> None:
    message = refused(b'\xef\xbb\xbf{"articles": []}')
    assert "BOM" in message and "without BOM" in message


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    "data, place",
    [
        pytest.param(b'{"articles": [{"n": 18446744073709551616}]}', "$.articles[0].n", id="2^64"),
        pytest.param(b'{"articles": [{"n": -9223372036854775809}]}', "$.articles[0].n", id="below-int64"),
        pytest.param(
            b'{"articles": [], "meta": {"big": [1, 99999999999999999999999]}}', "$.meta.big[1]", id="in-metadata"
        ),
        pytest.param(
            b'{"articles": [{}, {"a b": [[123456789012345678901234567890]]}]}',
            '$.articles[1]["a b"][0][0]',
            id="quoted-key",
        ),
    ],
)
def test_integers_beyond_64_bits_are_refused_with_their_path(data: bytes, place: str) -> None:
    message = refused(data)
    assert place in message and "64 bits" in message


def test_very_long_integer_is_refused_not_rounded() -> None:
    # 400 digits: a double would overflow. Refused, with its position in the text.
    message = refused(b'{"articles": [{"n": 1' + b"0" * 400 + b"}]}")
    assert "byte offset" in message


@pytest.mark.parametrize(
    "literal",
    [
        b"18446744073709551615",
        b"-9223372036854775808",
        b"9223372036854775808",
        b"0",
        b"-0",
        b"1e300",
        b"-0.0",
        b"5e-324",
        b"0.1",
        b"1.7976931348623157e308",
    ],
)
def test_numbers_a_fast_parser_holds_round_trip_exactly(literal: bytes) -> None:
    out, _ = select_batch_bytes(b'{"articles": [{"n": ' + literal + b'}], "m": [' + literal + b"]}")
    doc = orjson.loads(out)
    expected = orjson.loads(literal)
    for value in (doc["articles"][0]["n"], doc["m"][0]):
        assert type(value) is type(expected) and repr(value) == repr(expected)
        assert Decimal(repr(value)) == Decimal(literal.decode())  # the same number, exactly


@pytest.mark.parametrize(
    "literal",
    [
        pytest.param(b"1e-400", id="underflows-to-zero"),
        pytest.param(b"1.00000000000000000001", id="digits-beyond-double"),
        pytest.param(b"123456789012345678901234567890.5", id="large-with-fraction"),
    ],
)
def test_numbers_a_double_cannot_hold_are_kept_or_refused(literal: bytes) -> None:
    # Valid JSON numbers that a fast parser reads as a nearby double. Issue 2: such
    # a value must round-trip exactly or be refused with a clear error, never be
    # silently changed (1e-400 must not come back as 0.0).
    data = b'{"articles": [{"n": ' + literal + b"}]}"
    try:
        out, _ = select_batch_bytes(data, SOURCE)
    except InvalidBatchError as exc:
        assert "\n" not in str(exc) and SOURCE in str(exc)
        return
    written = orjson.loads(out)["articles"][0]["n"]
    assert Decimal(repr(written)) == Decimal(literal.decode()), f"{literal.decode()} was written back as {written!r}"


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"nan", b"1e400"])
def test_nan_and_infinity_are_refused(literal: bytes) -> None:
    assert "byte offset 2" in refused(b'{"articles": [{"n": ' + literal + b"}]}")


# --------------------------------------------------------------------------- duplicate keys


@pytest.mark.parametrize(
    "data, place, key",
    [
        pytest.param(b'{"articles": [], "articles": []}', "$ has", '"articles"', id="root"),
        pytest.param(
            b'{"articles": [{}, {"trafilatura": {"text": "a", "text": "b"}}]}',
            "$.articles[1].trafilatura",
            '"text"',
            id="in-block",
        ),
        pytest.param(b'{"articles": [{"id": 1, "id": 1}]}', "$.articles[0]", '"id"', id="same-value"),
        pytest.param(b'{"articles": [{"k" : 1, "k"\n: 2}]}', "$.articles[0]", '"k"', id="space-before-colon"),
        pytest.param(b'{"articles": [{"a\\"b": 1, "a\\"b": 2}]}', "$.articles[0]", '"a\\"b"', id="escaped-quote"),
        pytest.param(
            b'{"articles": [{"\\u00e9": 1, "\xc3\xa9": 2}]}', "$.articles[0]", '"é"', id="escaped-and-raw-same-key"
        ),
        pytest.param(b'{"articles": [], "m": {"x y": {"q": 1, "q": 2}}}', '$.m["x y"]', '"q"', id="quoted-path"),
    ],
)
def test_duplicate_keys_are_refused_with_their_path(data: bytes, place: str, key: str) -> None:
    message = refused(data)
    assert place in message and key in message


def test_keys_that_look_alike_are_not_duplicates() -> None:
    data = b'{"articles": [{"a": ":", "b": "\\":", "c\\\\": 1, "c": 2, "d" : {"d": "d:"}}]}'
    out, _ = select_batch_bytes(data)
    assert list(orjson.loads(out)["articles"][0]) == ["a", "b", "c\\", "c", "d", "selected_extractor"]


# --------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("opener, closer", [(b"[", b"]"), (b'{"a":', b"}")], ids=["arrays", "objects"])
def test_very_deep_nesting_is_a_clean_error(
    opener: bytes, closer: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    depth = 100_000
    data = b'{"articles": [], "x": ' + opener * depth + b"1" + closer * depth + b"}"
    assert "byte offset" in refused(data)
    inp = tmp_path / "deep.json"
    inp.write_bytes(data)
    code, _, err = run(["select", str(inp)], capsys)
    assert code == EXIT_INVALID_INPUT
    assert_one_line_error(err, str(inp))
    assert names(tmp_path) == ["deep.json"]


@pytest.mark.parametrize(
    "inner, valid",
    [
        pytest.param(b"1e300", True, id="large-float"),
        pytest.param(b'{"a": ":"}', True, id="value-string-starting-with-colon"),
        pytest.param(b'{"k": 1, "k": 2}', False, id="duplicate-key"),
        pytest.param(b"123456789012345678901234567890", False, id="big-int"),
    ],
)
def test_nesting_just_under_the_parser_limit_is_not_a_recursion_error(inner: bytes, valid: bool) -> None:
    # 1000 levels are accepted by the fast parser (its limit is 1024), and each of
    # these values sends the document to the exact (slow) check. A valid document
    # may be accepted or refused as too deep; a duplicate key or a big integer must
    # be refused. Never a RecursionError.
    depth = 1000
    data = b'{"articles": [], "x": ' + b"[" * depth + inner + b"]" * depth + b"}"
    try:
        out, _ = select_batch_bytes(data, SOURCE)
    except InvalidBatchError as exc:
        assert "\n" not in str(exc) and SOURCE in str(exc)
    else:
        assert valid, "an invalid document was accepted"
        assert orjson.loads(out)["x"] == orjson.loads(data)["x"]


# --------------------------------------------------------------------------- output shape


def test_empty_articles_gives_empty_list_and_keeps_root_keys() -> None:
    out, selections = select_batch_bytes(b'{"z": 1, "articles": [], "a": {"b": [true, null]}}')
    assert selections == []
    assert out == b'{\n  "z": 1,\n  "articles": [],\n  "a": {\n    "b": [\n      true,\n      null\n    ]\n  }\n}\n'
    assert select_batch_bytes(b'{"articles":[]}')[0] == b'{\n  "articles": []\n}\n'


def test_selected_extractor_replaced_in_place_or_appended_last() -> None:
    # Article 0 has no text at all (all_unavailable -> newspaper4k); article 1's only
    # text is readability's (single candidate); article 2 has none either.
    data = orjson.dumps(
        {
            "articles": [
                {"a": 1, "selected_extractor": "trafilatura", "b": 2},
                {"selected_extractor": None, "readability": {"cleaned_text": TEXT}, "c": "é"},
                {"id": "no key yet"},
            ]
        }
    )
    out, _ = select_batch_bytes(data)
    assert out == (
        b'{\n  "articles": [\n'
        b'    {\n      "a": 1,\n      "selected_extractor": "newspaper4k",\n      "b": 2\n    },\n'
        b'    {\n      "selected_extractor": "readability",\n      "readability": {\n'
        b'        "cleaned_text": "' + TEXT.encode() + b'"\n      },\n      "c": "\xc3\xa9"\n    },\n'
        b'    {\n      "id": "no key yet",\n      "selected_extractor": "newspaper4k"\n    }\n'
        b"  ]\n}\n"
    )


def test_selected_extractor_inside_blocks_or_root_is_not_touched() -> None:
    doc = {"selected_extractor": "root value", "articles": [{"newspaper4k": {"text": TEXT, "selected_extractor": 5}}]}
    out = orjson.loads(select_batch_bytes(orjson.dumps(doc))[0])
    assert out["selected_extractor"] == "root value"
    assert out["articles"][0]["newspaper4k"] == {"text": TEXT, "selected_extractor": 5}
    assert out["articles"][0]["selected_extractor"] == "newspaper4k"


# --------------------------------------------------------------------------- paths


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    path = tmp_path / "batch_extracted.json"
    path.write_bytes(orjson.dumps({"articles": [{"newspaper4k": {"text": TEXT}}, {"trafilatura": {"text": TEXT}}]}))
    return path


def test_output_path_that_is_the_input_is_refused(batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = batch.read_bytes()
    mtime = batch.stat().st_mtime_ns
    spellings = [
        str(batch),
        str(batch.parent / "." / batch.name),
        str(batch.parent / ".." / batch.parent.name / batch.name),
    ]
    link = batch.parent / "link.json"
    link.symlink_to(batch)
    spellings.append(str(link))
    for spelling in spellings:
        code, out, err = run(["select", str(batch), "--output", spelling], capsys)
        assert code == EXIT_INVALID_INPUT, spelling
        assert_one_line_error(err, "input")
        assert out == ""
    assert batch.read_bytes() == before and batch.stat().st_mtime_ns == mtime
    assert names(batch.parent) == ["batch_extracted.json", "link.json"]


def test_report_path_that_is_the_input_is_refused(batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = batch.read_bytes()
    code, _, err = run(["select", str(batch), "--report", str(batch)], capsys)
    assert code == EXIT_INVALID_INPUT
    assert_one_line_error(err, str(batch))
    assert batch.read_bytes() == before
    assert names(batch.parent) == ["batch_extracted.json"]


@pytest.mark.parametrize("flag", ["--output", "--report"])
def test_missing_output_directory_is_refused(flag: str, batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = batch.parent / "no" / "such" / "dir"
    code, out, err = run(["select", str(batch), flag, str(missing / "out.json")], capsys)
    assert code == EXIT_INVALID_INPUT
    assert_one_line_error(err, str(missing))
    assert not (batch.parent / "no").exists()
    assert names(batch.parent) == ["batch_extracted.json"]


def test_output_that_is_a_directory_is_refused(batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (batch.parent / "d").mkdir()
    code, _, err = run(["select", str(batch), "--output", str(batch.parent / "d")], capsys)
    assert code == EXIT_INVALID_INPUT
    assert_one_line_error(err, "directory")
    assert names(batch.parent / "d") == []


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unusable_input_path_is_refused(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "in.json"
    if kind == "directory":
        inp.mkdir()
    code, _, err = run(["select", str(inp)], capsys)
    assert code == EXIT_INVALID_INPUT
    assert_one_line_error(err, str(inp))
    assert names(tmp_path) == ([] if kind == "missing" else ["in.json"])


# --------------------------------------------------------------------------- atomic writes


def _oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


@pytest.mark.parametrize(
    "target, code, transient",
    [
        pytest.param("fsync", errno.ENOSPC, False, id="fsync-ENOSPC"),
        pytest.param("fsync", errno.EIO, True, id="fsync-EIO"),
        pytest.param("replace", errno.ENOSPC, False, id="replace-ENOSPC"),
        pytest.param("replace", errno.EIO, True, id="replace-EIO"),
        pytest.param("write", errno.ENOSPC, False, id="write-ENOSPC"),
        pytest.param("write", errno.EIO, True, id="write-EIO"),
    ],
)
def test_failed_write_leaves_previous_output_and_no_temporary_file(
    target: str, code: int, transient: bool, batch: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = batch.parent / "batch_extracted_selected.json"
    out.write_bytes(b"previous output\n")
    before = batch.read_bytes()
    mocker.patch(f"selection_storage.atomic.os.{target}", side_effect=_oserror(code))

    with pytest.raises(WriteError) as info:
        select_file(batch)
    assert info.value.errno_code == code and info.value.transient is transient
    assert out.read_bytes() == b"previous output\n"
    assert names(batch.parent) == ["batch_extracted.json", "batch_extracted_selected.json"]

    status, stdout, err = run(["select", str(batch)], capsys)
    assert status == EXIT_IO_ERROR
    assert_one_line_error(err, str(out))
    assert stdout == ""
    assert out.read_bytes() == b"previous output\n"
    assert batch.read_bytes() == before
    assert names(batch.parent) == ["batch_extracted.json", "batch_extracted_selected.json"]


def test_failed_first_write_leaves_no_output_at_all(
    batch: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    mocker.patch("selection_storage.atomic.os.fsync", side_effect=_oserror(errno.ENOSPC))
    status, _, err = run(["select", str(batch)], capsys)
    assert status == EXIT_IO_ERROR
    assert_one_line_error(err, "space")
    assert names(batch.parent) == ["batch_extracted.json"]


def test_interrupted_write_leaves_no_temporary_file(
    batch: Path, mocker: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    out = batch.parent / "batch_extracted_selected.json"
    out.write_bytes(b"previous output\n")
    mocker.patch("selection_storage.atomic.os.fsync", side_effect=KeyboardInterrupt)
    status, _, err = run(["select", str(batch)], capsys)
    assert status == 130
    assert_one_line_error(err, "interrupted")
    assert out.read_bytes() == b"previous output\n"
    assert names(batch.parent) == ["batch_extracted.json", "batch_extracted_selected.json"]


def test_successful_write_replaces_previous_output(batch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = batch.parent / "batch_extracted_selected.json"
    out.write_bytes(b"previous output\n")
    status, _, err = run(["select", str(batch)], capsys)
    assert status == 0, err
    assert out.read_bytes() == select_batch_bytes(batch.read_bytes())[0]
    assert names(batch.parent) == ["batch_extracted.json", "batch_extracted_selected.json"]


# --------------------------------------------------------------------------- report


def test_report_has_one_line_per_article_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    articles: list[dict[str, Any]] = [
        {"id": 0, "newspaper4k": {"text": TEXT}, "readability": {"cleaned_text": TEXT + " Read more."}},
        {"id": 1},
        {"id": 2, "trafilatura": {"text": "line one\nline two é"}},
        {"id": 3, "trafilatura": {"text": TEXT, "error": "x"}, "newspaper4k": {"text": TEXT + " Share this"}},
        {"id": 4, "readability": {"cleaned_text": "ｆｕｌｌ\nwidth"}, "newspaper4k": {"text": "full width"}},
    ]
    inp = tmp_path / "b.json"
    inp.write_bytes(orjson.dumps({"articles": articles}))
    report = tmp_path / "b.report.jsonl"

    code, out, err = run(["select", str(inp), "--report", str(report)], capsys)

    assert code == 0, err
    raw = report.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    assert len(lines) == len(articles)
    explanations = [orjson.loads(line) for line in lines]
    selected = [a["selected_extractor"] for a in orjson.loads((tmp_path / "b_selected.json").read_bytes())["articles"]]
    for i, (expl, art) in enumerate(zip(explanations, articles, strict=True)):
        assert list(expl)[:2] == ["index", "id"] and expl["id"] == art["id"]  # joins to the batch
        assert expl == orjson.loads(orjson.dumps(report_entry(art, select_article(art, i))))
        assert expl["selected_extractor"] == selected[i] and selected[i] in EXTRACTORS
        assert [c["name"] for c in expl["candidates"]] == list(EXTRACTORS)
    assert f"report: {report}" in out
    assert names(tmp_path) == ["b.json", "b.report.jsonl", "b_selected.json"]


def test_report_for_empty_batch_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "e.json"
    inp.write_bytes(b'{"articles": []}')
    code, _, err = run(["select", str(inp), "--report", str(tmp_path / "r.jsonl")], capsys)
    assert code == 0, err
    assert (tmp_path / "r.jsonl").read_bytes() == b""
