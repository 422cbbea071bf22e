#!/usr/bin/env python3
"""Write the hostile-input corpus ``tests/data/bad/`` and its manifest ``cases.json``.

    python scripts/make_bad_corpus.py            # rewrite tests/data/bad/
    python scripts/make_bad_corpus.py --check    # exit 1 if the committed corpus differs

Every case is written here by hand, with what the command must answer: the
exit status and three message fragments (what is wrong, where, what to do).
The expectations are not taken from the command's output: they say what a
user must be told. ``docs/errors.md`` shows the actual messages
(``scripts/make_errors_doc.py``).

Three kinds of case:

* ``file``: the bytes are committed in ``tests/data/bad/<id>.json``;
* ``generated``: too large to commit (deep nesting); :func:`generated_bytes`
  builds them at test time, the same on every run;
* ``setup``: about paths, not bytes (a directory, a missing file, a symlink
  loop, a refused output...); ``tests/cli/test_bad_inputs.py`` builds the situation.

Cases marked ``"valid": true`` are not errors: blocks and fields of the wrong
type are valid input that make a candidate unavailable; they must exit 0 with
the selections given in ``selected``. A case with ``known_bug`` documents a
defect of ``selection_core`` that is reported and not fixed yet; its test is a
strict expected failure until the fix lands.

The output bytes depend only on this file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BAD_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "bad"

INVALID = 65  # selection_core.errors.EXIT_INVALID_INPUT
MAX_DEPTH = 254  # deepest nesting orjson writes, the root counted as 1 (selection_core.batch.MAX_DEPTH)
OK = 0

SHAPE_FIX = 'expected {"articles": [ {...}, ... ]}'
SYNTAX_FIX = "fix the JSON syntax"
SURROGATE_FIX = "fix or remove it"
UTF8_FIX = "save it as UTF-8"
DUP_FIX = "remove or rename the duplicate"
BIG_FIX = "store it as a string"

A1 = b'{"id": "a1", "newspaper4k": {"text": "one two three four five six"}}'


def _case(
    id: str,
    data: bytes | None,
    what: str,
    place: str,
    fix: str,
    *,
    exit: int = INVALID,
    kind: str | None = None,
    note: str = "",
    known_bug: str = "",
) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": id,
        "kind": kind or ("file" if data is not None else "setup"),
        "file": f"{id}.json" if data is not None else None,
        "expected_exit": exit,
        "what": what,
        "place": place,
        "fix": fix,
        "note": note,
    }
    if known_bug:
        case["known_bug"] = known_bug
    case["_bytes"] = data
    return case


def _valid(id: str, data: bytes, selected: list[str], note: str) -> dict[str, Any]:
    case = _case(id, data, "", "", "", exit=OK, note=note)
    case["valid"] = True
    case["selected"] = selected
    return case


def _nested(depth: int, inner: bytes, kind: str = "array") -> bytes:
    if kind == "array":
        return b"[" * depth + inner + b"]" * depth
    return b'{"k": ' * depth + inner + b"}" * depth


def _in_article(value: bytes) -> bytes:
    return b'{"articles": [{"id": "a1", "x": ' + value + b"}]}\n"


def generated_bytes(case_id: str) -> bytes:
    """The bytes of a ``generated`` case (the same on every run)."""
    return {
        "deep_arrays_100k": lambda: _in_article(_nested(100_000, b"1")),
        "deep_objects_100k": lambda: _in_article(_nested(100_000, b"1", "object")),
        "deep_arrays_300": lambda: _in_article(_nested(300, b"1")),
        "deep_objects_300": lambda: _in_article(_nested(300, b"1", "object")),
        "deep_duplicate_key_1000": lambda: _in_article(_nested(1000, b'{"a": 1, "a": 2}')),
        "deep_big_int_1000": lambda: _in_article(_nested(1000, b"123456789012345678901234567890")),
        "deep_duplicate_key_1020": lambda: _in_article(_nested(1020, b'{"a": 1, "a": 2}')),
    }[case_id]()


def cases() -> list[dict[str, Any]]:
    c = _case
    out = [
        # --- not JSON at all, or cut short
        c("empty_file", b"", "the file is empty (0 bytes)", "empty_file.json", SHAPE_FIX),
        c("whitespace_only", b" \n\t\r\n  ", "holds only whitespace", "whitespace_only.json", SHAPE_FIX),
        c(
            "truncated_in_string",
            b'{"articles": [{"id": "a1", "newspaper4k": {"text": "one two',
            "the file is cut short",
            "$.articles[0], from byte offset 14",
            SYNTAX_FIX,
        ),
        c(
            "truncated_after_comma",
            b'{"articles": [{"id": "a1"},',
            "the file ends",
            "$.articles[1] at byte offset 27",
            SYNTAX_FIX,
        ),
        c(
            "truncated_in_escape",
            b'{"articles": [{"id": "\\u00',
            "cut short",
            "$.articles[0], from byte offset 14",
            SYNTAX_FIX,
        ),
        c(
            "truncated_multiline",
            b'{\n  "articles": [\n    {"id": "a1"}\n',
            "the file ends",
            "after $.articles[0] at byte offset 35",
            SYNTAX_FIX,
        ),
        c(
            "trailing_garbage",
            b'{"articles": []} garbage\n',
            "more after the root object",
            "byte offset 17",
            "remove it",
        ),
        c(
            "trailing_second_document",
            b'{"articles": []}\n{"articles": []}\n',
            "more after the root object",
            "byte offset 17",
            "remove it",
        ),
        c(
            "trailing_comma_in_array",
            b'{"articles": [' + A1 + b",]}",
            "found ']'",
            f"expected $.articles[1] at byte offset {14 + len(A1) + 1}",
            SYNTAX_FIX,
        ),
        c("trailing_comma_in_object", b'{"articles": [], }', "expected a key", "byte offset 17", SYNTAX_FIX),
        c("single_quotes", b"{'articles': []}", "expected a key", "byte offset 1", SYNTAX_FIX),
        c("unquoted_key", b"{articles: []}", "expected a key", "byte offset 1", SYNTAX_FIX),
        c("line_comment", b'// batch\n{"articles": []}', "not valid JSON", "byte offset 0", SHAPE_FIX),
        c("raw_tab_in_string", b'{"articles": [{"id": "a\tb"}]}', "control character", "byte offset 23", SYNTAX_FIX),
        c(
            "raw_newline_in_string",
            b'{"articles": [{"id": "a\nb"}]}',
            "control character",
            "byte offset 23",
            SYNTAX_FIX,
        ),
        c("invalid_escape", b'{"articles": [{"id": "\\x41"}]}', "not valid JSON", "$.articles[0]", SYNTAX_FIX),
        c(
            "python_literals",
            b'{"articles": [{"id": None, "ok": True}]}',
            "not valid JSON",
            "byte offset 21",
            SYNTAX_FIX,
        ),
        # --- encodings
        c(
            "utf8_bom",
            b"\xef\xbb\xbf" + b'{"articles": []}',
            "byte-order mark",
            "utf8_bom.json",
            "save it as UTF-8 without BOM",
        ),
        c(
            "utf16le_bom",
            b"\xff\xfe" + '{"articles": []}'.encode("utf-16-le"),
            "UTF-16",
            "utf16le_bom.json",
            "convert it to UTF-8",
        ),
        c(
            "utf16be_bom",
            b"\xfe\xff" + '{"articles": []}'.encode("utf-16-be"),
            "UTF-16",
            "utf16be_bom.json",
            "convert it to UTF-8",
        ),
        c(
            "utf16le_no_bom",
            '{"articles": []}'.encode("utf-16-le"),
            "UTF-16",
            "utf16le_no_bom.json",
            "convert it to UTF-8",
        ),
        c(
            "utf16be_no_bom",
            '{"articles": []}'.encode("utf-16-be"),
            "UTF-16",
            "utf16be_no_bom.json",
            "convert it to UTF-8",
        ),
        c(
            "utf32le_bom",
            '\ufeff{"articles": []}'.encode("utf-32-le"),
            "UTF-16",
            "utf32le_bom.json",
            "convert it to UTF-8",
            note="UTF-32 is reported as UTF-16; the fix (convert to UTF-8) is the same",
        ),
        c(
            "latin1_text",
            '{"articles": [{"id": "café"}]}'.encode("latin-1"),
            "not valid UTF-8",
            "byte offset 25",
            UTF8_FIX,
        ),
        c(
            "invalid_utf8_continuation",
            b'{"articles": [{"id": "\xc3\x28"}]}',
            "not valid UTF-8",
            "byte offset 22",
            UTF8_FIX,
        ),
        c(
            "overlong_utf8",
            b'{"articles": [{"id": "\xc0\xaf"}]}',
            "not valid UTF-8",
            "byte offset 22",
            UTF8_FIX,
        ),
        c(
            "utf8_encoded_surrogate",
            b'{"articles": [{"id": "\xed\xa0\x80"}]}',
            "not valid UTF-8",
            "byte offset 22",
            UTF8_FIX,
        ),
        c(
            "lone_high_surrogate_escape",
            b'{"articles": [{"id": "\\ud800"}]}',
            "surrogate",
            "$.articles[0]",
            SURROGATE_FIX,
        ),
        c(
            "lone_low_surrogate_escape",
            b'{"articles": [{"id": "\\udc00 text"}]}',
            "surrogate",
            "$.articles[0]",
            SURROGATE_FIX,
        ),
        c("surrogate_escape_in_key", b'{"articles": [{"\\udfff": 1}]}', "surrogate", "$.articles[0]", SURROGATE_FIX),
        c(
            "reversed_surrogate_pair",
            b'{"articles": [{"id": "\\ude00\\ud83d"}]}',
            "surrogate",
            "$.articles[0]",
            SURROGATE_FIX,
        ),
        # --- numbers JSON does not allow, or that cannot be kept exactly
        c("nan", b'{"articles": [{"id": "a1", "score": NaN}]}', "not valid JSON", "byte offset 36", SYNTAX_FIX),
        c(
            "infinity",
            b'{"articles": [{"id": "a1", "score": Infinity}]}',
            "not valid JSON",
            "byte offset 36",
            SYNTAX_FIX,
        ),
        c(
            "negative_infinity",
            b'{"articles": [{"id": "a1", "score": -Infinity}]}',
            "not valid JSON",
            "$.articles[0]",
            SYNTAX_FIX,
        ),
        c(
            "float_overflow",
            b'{"articles": [{"id": "a1", "score": 1e400}]}',
            "infinity",
            "byte offset 36",
            "too large for a 64-bit float: store it as a string",
        ),
        c(
            "float_underflow",
            b'{"articles": [{"id": "a1", "score": 1e-400}]}',
            "a 64-bit float cannot hold exactly",
            "$.articles[0].score",
            "store it as a string",
            note="would be written as 0.0",
        ),
        c(
            "float_25_digits",
            b'{"articles": [{"id": "a1", "score": 0.1000000000000000000000001}]}',
            "a 64-bit float cannot hold exactly",
            "$.articles[0].score",
            "store it as a string",
            note="would be written as 0.1",
        ),
        c(
            "float_big_integer_literal",
            b'{"run": {"total": 12345678901234567890123.0}, "articles": []}',
            "a 64-bit float cannot hold exactly",
            "$.run.total",
            "store it as a string",
        ),
        c(
            "int_2_pow_64",
            b'{"articles": [{"id": "a1", "n": 18446744073709551616}]}',
            "integer beyond 64 bits",
            "$.articles[0].n",
            BIG_FIX,
        ),
        c(
            "int_below_int64_min",
            b'{"articles": [{"id": "a1", "n": -9223372036854775809}]}',
            "integer beyond 64 bits",
            "$.articles[0].n",
            BIG_FIX,
        ),
        c(
            "int_300_digits",
            b'{"articles": [{"id": "a1", "n": ' + b"9" * 300 + b"}]}",
            "integer beyond 64 bits",
            "$.articles[0].n",
            BIG_FIX,
        ),
        c(
            "big_int_in_root_metadata",
            b'{"run": {"counts": [1, 2, 36893488147419103232]}, "articles": []}',
            "integer beyond 64 bits",
            "$.run.counts[2]",
            BIG_FIX,
        ),
        c(
            "big_negative_int_nested",
            b'{"articles": [' + A1 + b', {"id": "a2", "meta": {"deep": [[{"v": -123456789012345678901234567890}]]}}]}',
            "integer beyond 64 bits",
            "$.articles[1].meta.deep[0][0].v",
            BIG_FIX,
        ),
        c(
            "big_int_in_block",
            b'{"articles": [{"id": "a1", "newspaper4k": {"text": "a b c", "bytes": 99999999999999999999}}]}',
            "integer beyond 64 bits",
            "$.articles[0].newspaper4k.bytes",
            BIG_FIX,
        ),
        # --- duplicate keys (one value would be lost)
        c(
            "duplicate_articles_key",
            b'{"articles": [' + A1 + b'], "articles": []}',
            'the key "articles" more than once',
            f"again at byte offset {14 + len(A1) + 3}",
            DUP_FIX,
        ),
        c(
            "duplicate_root_metadata_key",
            b'{"run": 1, "articles": [], "run": 2}',
            'the key "run" more than once',
            "$ has",
            DUP_FIX,
        ),
        c(
            "duplicate_article_key",
            b'{"articles": [' + A1 + b', {"id": "a2", "id": "a3"}]}',
            'the key "id" more than once',
            "$.articles[1]",
            DUP_FIX,
        ),
        c(
            "duplicate_block_key",
            b'{"articles": [{"id": "a1", "newspaper4k": {"text": "a b", "text": "c d"}}]}',
            'the key "text" more than once',
            "$.articles[0].newspaper4k",
            DUP_FIX,
        ),
        c(
            "duplicate_nested_key",
            b'{"articles": [{"id": "a1", "meta": {"tags": [{"k": 1, "k": 1}]}}]}',
            'the key "k" more than once',
            "$.articles[0].meta.tags[0]",
            DUP_FIX,
        ),
        c(
            "duplicate_key_via_escape",
            b'{"articles": [{"id": "a1", "\\u0069d": "a2"}]}',
            'the key "id" more than once',
            "$.articles[0]",
            DUP_FIX,
        ),
        c(
            "duplicate_key_spaced_colon",
            b'{"articles": [{"id" : "a1", "id"\n: "a2"}]}',
            'the key "id" more than once',
            "$.articles[0]",
            DUP_FIX,
        ),
        # --- wrong type at the root, for articles, for an article
        c("root_array", b"[" + A1 + b"]", "the root is an array", "root_array.json", SHAPE_FIX),
        c("root_string", b'"articles"', "the root is a string", "root_string.json", SHAPE_FIX),
        c("root_number", b"42", "the root is a number", "root_number.json", SHAPE_FIX),
        c("root_null", b"null", "the root is null", "root_null.json", SHAPE_FIX),
        c("root_true", b"true", "the root is a boolean", "root_true.json", SHAPE_FIX),
        # --- plain text that starts like a JSON value: not valid JSON, where parsing stops
        c("plain_text_true", b"true story, as told\n", "not valid JSON", "byte offset 5", SHAPE_FIX),
        c("plain_text_false", b"false start\n", "not valid JSON", "byte offset 6", SHAPE_FIX),
        c("plain_text_nothing", b"nothing to see\n", "not valid JSON", "byte offset 0", SHAPE_FIX),
        c("plain_text_null", b"null and void\n", "not valid JSON", "byte offset 5", SHAPE_FIX),
        c("plain_text_nan", b"nan\n", "not valid JSON", "byte offset 0", SHAPE_FIX),
        c("plain_text_number", b"3 apples\n", "not valid JSON", "byte offset 2", SHAPE_FIX),
        c("plain_text_quoted", b'"Hello," she said.\n', "not valid JSON", "byte offset 9", SHAPE_FIX),
        c("no_articles_key", b'{"article": []}', 'has no "articles" key', "root object", SHAPE_FIX),
        c("articles_null", b'{"articles": null}', "is null", "$.articles", SHAPE_FIX),
        c("articles_object", b'{"articles": {"0": ' + A1 + b"}}", "is an object", "$.articles", SHAPE_FIX),
        c("articles_string", b'{"articles": "a1"}', "is a string", "$.articles", SHAPE_FIX),
        c("articles_number", b'{"articles": 3}', "is a number", "$.articles", SHAPE_FIX),
        c(
            "article_number",
            b'{"articles": [7]}',
            "is a number",
            "$.articles[0]",
            "every article must be a JSON object",
        ),
        c(
            "article_string",
            b'{"articles": [' + A1 + b', "a2"]}',
            "is a string",
            "$.articles[1]",
            "every article must be a JSON object",
        ),
        c(
            "article_null",
            b'{"articles": [' + A1 + b", " + A1 + b", null]}",
            "is null",
            "$.articles[2]",
            "every article must be a JSON object",
        ),
        c(
            "article_array",
            b'{"articles": [[' + A1 + b"]]}",
            "is an array",
            "$.articles[0]",
            "every article must be a JSON object",
        ),
        c(
            "article_boolean",
            b'{"articles": [false]}',
            "is a boolean",
            "$.articles[0]",
            "every article must be a JSON object",
        ),
        # --- nesting (generated at test time)
        c(
            "deep_arrays_100k",
            None,
            "levels deep",
            "$.articles[0], from byte offset 14",
            "flatten",
            kind="generated",
            note="100,000 nested arrays inside an article: would break a recursive parser",
        ),
        c(
            "deep_objects_100k",
            None,
            "levels deep",
            "$.articles[0], from byte offset 14",
            "flatten",
            kind="generated",
            note="100,000 nested objects inside an article",
        ),
        c(
            "nesting_one_past_the_limit",
            _in_article(_nested(MAX_DEPTH - 2, b"1")),
            "nested more than 254 levels deep",
            "$.articles[0]",
            "flatten that value",
            note="255 levels counting the root: one more than orjson can write back",
        ),
        c(
            "deep_arrays_300",
            None,
            "nested more than 254 levels deep",
            "$.articles[0]",
            "flatten that value",
            kind="generated",
            note="300 nested arrays: parsed by orjson (limit 1024) but not writable by it (limit 254)",
        ),
        c(
            "deep_objects_300",
            None,
            "nested more than 254 levels deep",
            "$.articles[0]",
            "flatten that value",
            kind="generated",
            note="300 nested objects",
        ),
        c(
            "deep_duplicate_key_1000",
            None,
            "nested more than 254 levels deep",
            "$.articles[0]",
            "flatten that value",
            kind="generated",
            note="a duplicate key 1000 levels down (deeper than the exact re-parse's default recursion limit)",
        ),
        c(
            "deep_big_int_1000",
            None,
            "nested more than 254 levels deep",
            "$.articles[0]",
            "flatten that value",
            kind="generated",
            note="an integer beyond 64 bits 1000 levels down",
        ),
        c(
            "deep_duplicate_key_1020",
            None,
            "nested more than 254 levels deep",
            "$.articles[0]",
            "flatten that value",
            kind="generated",
            note="a duplicate key just inside orjson's parse limit",
        ),
        c(
            "deep_in_root_metadata",
            b'{"meta": ' + _nested(MAX_DEPTH, b"0") + b', "articles": []}',
            "nested more than 254 levels deep",
            "$.meta",
            "flatten that value",
            note="the depth limit holds outside the articles too",
        ),
        # --- paths (built by the test)
        c("input_is_directory", None, "is a directory", "{input}", "give the path of a batch JSON file"),
        c("input_missing", None, "no such file", "{input}", "check the input path"),
        c(
            "input_unreadable",
            None,
            "cannot be read (permission denied)",
            "{input}",
            "make it readable",
            note="as root, permission is refused by a fault injected at open(); otherwise by chmod 000",
        ),
        c(
            "input_symlink_loop",
            None,
            "symbolic link loop",
            "{input}",
            "point the path at a real file",
        ),
        c("input_symlink_to_directory", None, "is a directory", "{input}", "give the path of a batch JSON file"),
        c("output_dir_missing", None, "does not exist", "{output}", "create it first"),
        c(
            "output_dir_readonly",
            None,
            "is not writable",
            "{output}",
            "choose another --output",
            note="a read-only tmpfs mount (root bypasses chmod); skipped where mounting is not permitted",
        ),
        c("output_is_directory", None, "is a directory", "{output}", "give a file path for the output"),
        c("output_is_input", None, "is the input file itself", "{output}", "choose another --output"),
        c(
            "output_is_input_dot_slash",
            None,
            "is the input file itself",
            "in_extracted.json:",
            "choose another --output",
            note="the path is named as the command normalized it",
        ),
        c("output_is_input_dot_dot", None, "is the input file itself", "{output}", "choose another --output"),
        c("output_is_input_absolute", None, "is the input file itself", "{output}", "choose another --output"),
        c("output_symlink_to_input", None, "is the input file itself", "{output}", "choose another --output"),
        c("output_hardlink_to_input", None, "is the input file itself", "{output}", "choose another --output"),
        c("output_symlink_loop", None, "symbolic link loop", "{output}", ""),
        c(
            "report_is_input",
            None,
            "is the input file itself",
            "{input}",
            "choose another --report",
        ),
        c("report_is_output", None, "the report path is the output path", "{output}", "choose another --report"),
        # --- valid input of unusual types: the candidate is unavailable, not an error
        _valid(
            "valid_block_is_string",
            b'{"articles": [{"id": "a1", "trafilatura": "one two three four five six", '
            b'"newspaper4k": {"text": "one two three four five"}}]}',
            ["newspaper4k"],
            "a block that is a string is unavailable",
        ),
        _valid(
            "valid_block_is_array",
            b'{"articles": [{"newspaper4k": ["one two three"], "readability": {"cleaned_text": "one two three"}}]}',
            ["readability"],
            "a block that is an array is unavailable",
        ),
        _valid(
            "valid_block_is_null",
            b'{"articles": [{"newspaper4k": null, "trafilatura": {"text": "a b c d e f"}}]}',
            ["trafilatura"],
            "a null block is unavailable",
        ),
        _valid(
            "valid_text_is_number",
            b'{"articles": [{"newspaper4k": {"text": 12345}, "readability": {"cleaned_text": "a b c"}}]}',
            ["readability"],
            "a text that is a number is unavailable",
        ),
        _valid(
            "valid_text_is_object",
            b'{"articles": [{"newspaper4k": {"text": {"p": "a b c"}}, "trafilatura": {"text": "a b c"}}]}',
            ["trafilatura"],
            "a text that is an object is unavailable",
        ),
        _valid(
            "valid_text_is_null",
            b'{"articles": [{"trafilatura": {"text": null}, "readability": {"cleaned_text": "x y z"}}]}',
            ["readability"],
            "a null text is unavailable",
        ),
        _valid(
            "valid_readability_wrong_field",
            b'{"articles": [{"readability": {"text": "a b c d e f"}, "trafilatura": {"text": "z"}}]}',
            ["trafilatura"],
            "readability is read from cleaned_text only",
        ),
        _valid(
            "valid_text_without_tokens",
            b'{"articles": [{"newspaper4k": {"text": " -- ... !!! "}, "readability": {"cleaned_text": "word"}}]}',
            ["readability"],
            "a text with no letters or digits is unavailable",
        ),
        _valid(
            "valid_error_of_odd_types",
            b'{"articles": [{"newspaper4k": {"text": "q r s", "error": 0}, '
            b'"trafilatura": {"text": "a b c", "error": []}, "readability": {"cleaned_text": "a b c", "error": {}}}]}',
            ["readability"],
            "an error of 0, [] or {} counts as present: all three degraded, two agree, priority",
        ),
        _valid(
            "valid_all_blocks_wrong_type",
            b'{"articles": [{"trafilatura": 1, "newspaper4k": true, "readability": "x"}]}',
            ["newspaper4k"],
            "no candidate at all: the fallback",
        ),
        _valid(
            "valid_selected_extractor_wrong_type",
            b'{"articles": [{"selected_extractor": 7, "id": "a1", "newspaper4k": {"text": "a"}}]}',
            ["newspaper4k"],
            "an existing selected_extractor of any type is replaced in place",
        ),
        _valid(
            "valid_empty_articles_with_metadata",
            b'{"run": {"n": [1.5, -0, 1E2, "\\u00e9"]}, "articles": [], "z": null}',
            [],
            "an empty batch keeps its other root keys",
        ),
        _valid(
            "valid_64_bit_limits",
            b'{"articles": [{"id": "a1", "u": 18446744073709551615, "i": -9223372036854775808}]}',
            ["newspaper4k"],
            "the 64-bit limits themselves round-trip exactly",
        ),
        _valid(
            "valid_odd_keys",
            b'{"": 1, "articles": [{"": "", "\\u0000": 0, "\xf0\x9f\x98\x80": "\\ud83d\\ude00", "a\\"b": 1}]}',
            ["newspaper4k"],
            "empty, NUL, astral and escaped-quote keys are kept",
        ),
        _valid(
            "valid_deep_nesting_200",
            _in_article(_nested(200, b"1")),
            ["newspaper4k"],
            "200 nested arrays round-trip (within every parser's limit)",
        ),
        _valid(
            "valid_nesting_at_the_limit",
            _in_article(_nested(MAX_DEPTH - 4, b'{"k": 1.5}')),
            ["newspaper4k"],
            "254 levels counting the root: the deepest that round-trips",
        ),
        _valid(
            "valid_exact_floats",
            b'{"articles": [{"id": "a1", "f": '
            b"[0.1, 1e300, 5e-324, 9007199254740992.0, 1.7976931348623157e308, -0.0]}]}",
            ["newspaper4k"],
            "floats a double holds exactly round-trip (values; the spelling may change)",
        ),
    ]
    return out


#: The input of every ``setup`` case: a small valid batch.
SETUP_INPUT = "in_extracted.json"
SETUP_BATCH = b'{"articles": [{"id": "a1", "newspaper4k": {"text": "one two three four five six"}}]}\n'


def prepare(case: dict[str, Any], work: Path, readonly_dir: Callable[[], Path]) -> list[str]:
    """Build a case in the empty directory ``work``; return the arguments of
    ``content-selection select`` to run from ``work`` (paths relative to it).

    ``readonly_dir()`` must return a directory inside ``work`` that nobody can
    write (for ``output_dir_readonly``). ``input_unreadable`` only writes the
    input: making it unreadable is up to the caller (root reads any file).
    """
    if case["kind"] in ("file", "generated"):
        data = (BAD_DIR / case["file"]).read_bytes() if case["kind"] == "file" else generated_bytes(case["id"])
        (work / f"{case['id']}.json").write_bytes(data)
        return [f"{case['id']}.json"]
    inp = work / SETUP_INPUT
    inp.write_bytes(SETUP_BATCH)
    i = SETUP_INPUT
    name = case["id"]
    if name in ("input_symlink_loop", "output_symlink_loop"):
        os.symlink("loop_b", work / "loop_a")
        os.symlink("loop_a", work / "loop_b")
        return ["loop_a"] if name == "input_symlink_loop" else [i, "--output", "loop_a"]
    if name in ("input_is_directory", "input_symlink_to_directory", "output_is_directory", "output_is_input_dot_dot"):
        (work / "sub").mkdir()
    if name == "input_symlink_to_directory":
        os.symlink("sub", work / "sub_link.json")
    if name == "output_symlink_to_input":
        os.symlink(i, work / "alias.json")
    if name == "output_hardlink_to_input":
        os.link(inp, work / "hard.json")
    return {
        "input_is_directory": lambda: ["sub"],
        "input_missing": lambda: ["missing_extracted.json"],
        "input_unreadable": lambda: [i],
        "input_symlink_to_directory": lambda: ["sub_link.json"],
        "output_dir_missing": lambda: [i, "--output", "no_such_dir/out.json"],
        "output_dir_readonly": lambda: [i, "--output", f"{readonly_dir().relative_to(work)}/out.json"],
        "output_is_directory": lambda: [i, "--output", "sub"],
        "output_is_input": lambda: [i, "--output", i],
        "output_is_input_dot_slash": lambda: [i, "--output", f"./{i}"],
        "output_is_input_dot_dot": lambda: [i, "--output", f"sub/../{i}"],
        "output_is_input_absolute": lambda: [i, "--output", str(inp)],
        "output_symlink_to_input": lambda: [i, "--output", "alias.json"],
        "output_hardlink_to_input": lambda: [i, "--output", "hard.json"],
        "report_is_input": lambda: [i, "--report", i],
        "report_is_output": lambda: [i, "--output", "out.json", "--report", "./out.json"],
    }[name]()


def manifest(all_cases: list[dict[str, Any]]) -> bytes:
    rows = [{k: v for k, v in case.items() if not k.startswith("_")} for case in all_cases]
    return (json.dumps({"cases": rows}, indent=2, ensure_ascii=False) + "\n").encode()


def write(bad_dir: Path = BAD_DIR) -> list[Path]:
    bad_dir.mkdir(parents=True, exist_ok=True)
    all_cases = cases()
    ids = [case["id"] for case in all_cases]
    if len(set(ids)) != len(ids):
        raise SystemExit("duplicate case ids")
    written = []
    for case in all_cases:
        if case["_bytes"] is not None:
            path = bad_dir / case["file"]
            path.write_bytes(case["_bytes"])
            written.append(path)
    (bad_dir / "cases.json").write_bytes(manifest(all_cases))
    written.append(bad_dir / "cases.json")
    keep = {p.name for p in written} | {"README.md"}
    for stale in bad_dir.iterdir():
        if stale.name not in keep:
            stale.unlink()
    return written


def check(bad_dir: Path = BAD_DIR) -> list[str]:
    """Names of committed files that differ from what this script writes."""
    problems = []
    all_cases = cases()
    expected = {case["file"]: case["_bytes"] for case in all_cases if case["_bytes"] is not None}
    expected["cases.json"] = manifest(all_cases)
    for name, data in expected.items():
        path = bad_dir / name
        if not path.exists() or path.read_bytes() != data:
            problems.append(name)
    extra = {p.name for p in bad_dir.iterdir()} - set(expected) - {"README.md"}
    problems += sorted(f"{name} (not in the corpus)" for name in extra)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed corpus")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(f"differs: {p}", file=sys.stderr)
        return 1 if problems else 0
    written = write()
    n = len(cases())
    print(f"wrote {len(written) - 1} files and cases.json ({n} cases) in {BAD_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
