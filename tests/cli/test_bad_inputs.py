"""Every hostile input of ``tests/data/bad/cases.json`` through the real command.

Each case runs the command's entry point, ``selection_cli.main.main``, in a
fresh directory, with warnings turned into errors (so that a warning printed
on stderr cannot hide); a sample of one case per kind also runs as a real
``python -m selection_cli.main select`` subprocess. An invalid case must end with the invalid-input status (65),
nothing on stdout, exactly one line on stderr that says what is wrong, where
(the file, the JSON position or path) and what to do, no traceback, and the
directory exactly as it was (nothing written, nothing removed, the input's
bytes unchanged). A ``valid`` case (blocks and fields of the wrong type, odd
keys, the 64-bit limits) must succeed with the pinned selections and an output
that is the input plus ``selected_extractor``, key order included.

The corpus is written by ``scripts/make_bad_corpus.py``; a test checks that the
committed files are what the script writes. Cases with ``known_bug`` are strict
expected failures: they document a reported defect of ``selection_core`` and
start to fail (XPASS) the day it is fixed, so that the marker gets removed.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support import ROOT
from tests.support.faultkit import (
    EXIT_INVALID_INPUT,
    can_mount,
    listing,
    load_bad_corpus_script,
    run_select,
    stderr_lines,
    tmpfs,
)

BAD_DIR = ROOT / "tests" / "data" / "bad"
CASES: list[dict[str, Any]] = json.loads((BAD_DIR / "cases.json").read_text(encoding="utf-8"))["cases"]
PREFIX = "content-selection: error: "


corpus = load_bad_corpus_script()
INPUT = corpus.SETUP_INPUT


def _params(valid: bool, exclude: tuple[str, ...] = ()) -> list[Any]:
    out = []
    for case in CASES:
        if bool(case.get("valid")) != valid or case["id"] in exclude:
            continue
        marks = (
            [pytest.mark.xfail(strict=True, reason=f"known bug: {case['known_bug']}")] if case.get("known_bug") else []
        )
        out.append(pytest.param(case, id=case["id"], marks=marks))
    return out


def tree(directory: Path) -> dict[str, str]:
    """A directory's entries and their contents, one level of subdirectories deep."""
    out = listing(directory)
    for name, kind in list(out.items()):
        if kind == "dir":
            try:
                out.update({f"{name}/{k}": v for k, v in listing(directory / name).items()})
            except OSError:
                pass
    return out


@pytest.fixture
def work(tmp_path: Path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def readonly_dir(work: Path) -> Iterator[Path]:
    """A read-only directory that even root cannot write: a tmpfs mounted ``ro``."""
    if os.geteuid() != 0:
        d = work / "ro"
        d.mkdir()
        d.chmod(0o555)
        yield d
        d.chmod(0o755)
        return
    reason = can_mount()
    if reason:
        pytest.skip(f"root bypasses chmod, and a read-only mount is needed: {reason}")
    with tmpfs(work / "ro", "64k", readonly=True) as d:
        yield d


def _input_args(case: dict[str, Any], work: Path, request: pytest.FixtureRequest) -> list[str]:
    return corpus.prepare(case, work, lambda: request.getfixturevalue("readonly_dir"))


def _place(case: dict[str, Any], args: list[str]) -> str:
    output = args[args.index("--output") + 1] if "--output" in args else ""
    return case["place"].replace("{input}", args[0]).replace("{output}", output)


def _check_error(case: dict[str, Any], args: list[str], status: int, stdout: str, stderr: str) -> None:
    lines = stderr_lines(stderr)
    assert "Traceback" not in stderr
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    line = lines[0]
    assert line.startswith(PREFIX), line
    assert "internal error" not in line, line
    assert status == case["expected_exit"] == EXIT_INVALID_INPUT, line
    assert stdout == "", stdout
    for fragment in (case["what"], _place(case, args), case["fix"]):
        assert fragment in line, f"{fragment!r} not in {line!r}"


def _main(
    args: list[str], work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """Run ``content-selection select ARGS`` in-process from ``work``: (status, stdout, stderr)."""
    from selection_cli.main import main

    monkeypatch.chdir(work)
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = main(["select", *args])
    out, err = capsys.readouterr()
    return status, out, err


#: One case of each kind that also runs as a real subprocess.
SUBPROCESS_SAMPLE = (
    "truncated_in_string",
    "utf16le_bom",
    "invalid_utf8_continuation",
    "lone_high_surrogate_escape",
    "nan",
    "int_2_pow_64",
    "duplicate_article_key",
    "root_array",
    "article_null",
    "deep_arrays_100k",
    "input_is_directory",
    "output_dir_missing",
    "output_symlink_to_input",
)


@pytest.mark.parametrize("case", _params(valid=False, exclude=("input_unreadable",)))
def test_invalid_input_is_refused_cleanly(
    case: dict[str, Any],
    work: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = _input_args(case, work, request)
    before = tree(work)
    _check_error(case, args, *_main(args, work, capsys, monkeypatch))
    assert tree(work) == before, "the directory changed"


@pytest.mark.parametrize("case", [c for c in _params(valid=False) if c.id in SUBPROCESS_SAMPLE])
def test_invalid_input_is_refused_cleanly_by_the_real_process(
    case: dict[str, Any], work: Path, request: pytest.FixtureRequest
) -> None:
    args = _input_args(case, work, request)
    before = tree(work)
    proc = run_select(args, cwd=work)
    _check_error(case, args, proc.returncode, proc.stdout, proc.stderr)
    assert tree(work) == before, "the directory changed"


def test_unreadable_input_is_refused_cleanly(
    work: Path, mocker: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root reads any file whatever its mode, so as root the refusal comes from a
    fault injected at the ``open()`` of the input; otherwise from chmod 000."""
    case = next(c for c in CASES if c["id"] == "input_unreadable")
    args = corpus.prepare(case, work, lambda: work)
    inp = work / INPUT
    before = tree(work)
    if os.geteuid() == 0:
        real_open = open

        def refuse(file: Any, *a: Any, **k: Any) -> Any:
            if Path(file).name == INPUT:
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *a, **k)

        mocker.patch("selection_storage.files.open", side_effect=refuse, create=True)
        _check_error(case, args, *_main(args, work, capsys, monkeypatch))
    else:
        inp.chmod(0)
        try:
            proc = run_select(args, cwd=work)
        finally:
            inp.chmod(0o644)
        _check_error(case, args, proc.returncode, proc.stdout, proc.stderr)
    assert tree(work) == before


#: Plain text that starts like a JSON value, and a file that is one: (bytes, what the line must say), in both
#: formats. Only a file that is valid JSON may be told what its root (or line) is.
_LOOKS_LIKE_JSON = [
    pytest.param(
        b"true story\n", "not valid JSON at byte offset 5", "not valid JSON at byte offset 5", id="true-story"
    ),
    pytest.param(
        b"false start\n", "not valid JSON at byte offset 6", "not valid JSON at byte offset 6", id="false-start"
    ),
    pytest.param(b"nothing here\n", "not valid JSON at byte offset 0", "not valid JSON at byte offset 0", id="nothing"),
    pytest.param(
        b"null and void\n", "not valid JSON at byte offset 5", "not valid JSON at byte offset 5", id="null-and"
    ),
    pytest.param(b"nan\n", "not valid JSON at byte offset 0", "not valid JSON at byte offset 0", id="nan"),
    pytest.param(
        b"3 apples\n", "not valid JSON at byte offset 2", "not valid JSON at byte offset 2", id="number-words"
    ),
    pytest.param(b"tru\n", "not valid JSON at byte offset 0", "not valid JSON at byte offset 3", id="cut-literal"),
    pytest.param(b"true\n", "the root is a boolean", "line 1 is a boolean", id="valid-true"),
    pytest.param(b"null\n", "the root is null", "line 1 is null", id="valid-null"),
    pytest.param(b"3\n", "the root is a number", "line 1 is a number", id="valid-number"),
]


@pytest.mark.parametrize(
    "command, suffix",
    # run's early check reads a JSON Lines batch's lines, not their articles: its flow refuses them.
    [("select", ".json"), ("explain", ".json"), ("run", ".json"), ("select", ".jsonl"), ("explain", ".jsonl")],
)
@pytest.mark.parametrize("data, as_json, as_jsonl", _LOOKS_LIKE_JSON)
def test_plain_text_is_not_valid_json_whatever_it_starts_with(
    data: bytes,
    as_json: str,
    as_jsonl: str,
    command: str,
    suffix: str,
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selection_cli.main import main

    (work / f"notes{suffix}").write_bytes(data)
    before = tree(work)
    monkeypatch.chdir(work)
    capsys.readouterr()
    args = {"select": ["select"], "explain": ["explain", "--index", "0"], "run": ["run"]}[command]
    status = main([*args, f"notes{suffix}"])
    out, err = capsys.readouterr()
    lines = stderr_lines(err)
    assert (status, out, len(lines)) == (EXIT_INVALID_INPUT, "", 1), err
    fix = 'expected {"articles": [ {...}, ... ]}' if suffix == ".json" else "every line must be one article"
    assert f"notes{suffix}: " in lines[0] and (as_json if suffix == ".json" else as_jsonl) in lines[0], lines[0]
    assert fix in lines[0], lines[0]
    assert tree(work) == before


@pytest.mark.parametrize(
    "argv, named",
    [
        pytest.param(["select", "missing_dir/x.json"], "missing_dir/x.json: no such file", id="select"),
        pytest.param(
            ["select", "missing_dir/x.json", "-o", "nowhere/y.json"], "missing_dir/x.json: no such file", id="select-o"
        ),
        pytest.param(
            ["explain", "missing_dir/x.json", "--index", "0"], "missing_dir/x.json: no such file", id="explain"
        ),
        pytest.param(["run", "missing_dir/x.jsonl"], "missing_dir/x.jsonl: no such file", id="run"),
        pytest.param(
            ["run", "missing_dir/x.json", "--data-root", "."], "missing_dir/x.json: no such file", id="run-root"
        ),
        pytest.param(
            ["extract", "missing_dir/pages", "-o", "out/b_extracted.json"],
            "missing_dir/pages: no such file or directory",
            id="extract",
        ),
        pytest.param(["pipeline", "missing_dir/pages"], "missing_dir/pages: no such file or directory", id="pipeline"),
        pytest.param(
            ["pipeline", "missing_dir/pages", "--data-root", "."],
            "missing_dir/pages: no such file or directory",
            id="pipeline-root",
        ),
    ],
)
def test_a_missing_input_is_named_before_the_output_s_folder(
    argv: list[str], named: str, work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The input lies in a folder that does not exist, so the default output's folder is missing too: the input
    is what the user must fix."""
    from selection_cli.main import main

    monkeypatch.chdir(work)
    capsys.readouterr()
    status = main(argv)
    out, err = capsys.readouterr()
    lines = stderr_lines(err)
    assert (status, out, len(lines)) == (EXIT_INVALID_INPUT, "", 1), err
    assert named in lines[0] and "create it first" not in lines[0], lines[0]
    assert tree(work) == {}


def _with_selections(data: bytes, selected: list[str]) -> bytes:
    doc = orjson.loads(data)
    for article, name in zip(doc["articles"], selected, strict=True):
        article["selected_extractor"] = name  # in place if present, else appended last
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


@pytest.mark.parametrize("case", _params(valid=True))
def test_unusual_but_valid_input_is_selected(
    case: dict[str, Any], work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (BAD_DIR / case["file"]).read_bytes()
    (work / case["file"]).write_bytes(data)
    status, _out, err = _main([case["file"]], work, capsys, monkeypatch)
    assert status == 0, err
    assert err == ""
    out = (work / f"{case['id']}_selected.json").read_bytes()
    assert out == _with_selections(data, case["selected"])
    assert (work / case["file"]).read_bytes() == data


def test_committed_corpus_is_what_the_script_writes() -> None:
    assert corpus.check() == [], "run: python scripts/make_bad_corpus.py"


def test_corpus_is_large_and_covers_the_issue() -> None:
    invalid = [c for c in CASES if not c.get("valid")]
    assert len(invalid) >= 40
    ids = " ".join(c["id"] for c in CASES)
    for topic in (
        "truncated",
        "trailing",
        "root_",
        "articles_",
        "article_",
        "valid_block",
        "utf8_bom",
        "utf16le_bom",
        "utf16be_no_bom",
        "invalid_utf8",
        "surrogate",
        "nan",
        "infinity",
        "int_2_pow_64",
        "duplicate_",
        "deep_",
        "empty_file",
        "whitespace_only",
        "input_is_directory",
        "input_missing",
        "input_unreadable",
        "symlink_loop",
        "output_dir_missing",
        "output_dir_readonly",
        "output_is_input",
    ):
        assert topic in ids, topic
    committed = sum(p.stat().st_size for p in BAD_DIR.iterdir())
    assert committed < 100_000, "keep the committed corpus small; generate large cases at test time"


def test_every_case_is_in_the_errors_page() -> None:
    """``docs/errors.md`` is generated from the corpus (``scripts/make_errors_doc.py``)."""
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    missing = [c["id"] for c in CASES if f"| `{c['id']}` |" not in page]
    assert not missing, f"run: python scripts/make_errors_doc.py (missing: {missing})"
