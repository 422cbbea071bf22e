#!/usr/bin/env python3
"""Write ``docs/errors.md``: every case of the hostile-input corpus and the command's actual answer.

    python scripts/make_errors_doc.py            # rewrite docs/errors.md
    python scripts/make_errors_doc.py --check    # exit 1 if docs/errors.md is out of date

Each case of ``tests/data/bad/cases.json`` is built in a temporary directory
(``scripts/make_bad_corpus.py``'s ``prepare``) and run through the real
``python -m selection_cli.main select``; the table shows the exit status and the
one line the command printed, so the page always says what the command does,
known bugs included. Two cases need privileges: the read-only directory is a
read-only tmpfs mount (root only; otherwise ``chmod 0o555``), and the
unreadable input is ``chmod 000`` (as root, which reads any file, it is run
in-process with ``open()`` refusing the file). Paths of the temporary directory
are shown as ``<dir>``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "errors.md"
sys.path.insert(0, str(ROOT))

from tests.support.faultkit import can_mount, child_env, tmpfs  # noqa: E402


def _corpus() -> Any:
    spec = importlib.util.spec_from_file_location("make_bad_corpus", ROOT / "scripts" / "make_bad_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_unreadable_as_root(work: Path, args: list[str]) -> tuple[int, str]:
    from selection_cli.main import main

    real_open = open

    def refuse(file: Any, *a: Any, **k: Any) -> Any:
        if Path(file).name == args[0]:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)

    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(work)
    try:
        with (
            mock.patch("selection_storage.files.open", side_effect=refuse, create=True),
            contextlib.redirect_stderr(err),
        ):
            with contextlib.redirect_stdout(io.StringIO()):
                status = main(["select", *args])
    finally:
        os.chdir(cwd)
    return status, err.getvalue()


@dataclass
class Answer:
    """What the command answered to one case."""

    status: int | None  # None: the case cannot run on this machine
    message: str  # the line shown in the table
    one_clean_line: bool = False  # status 65, one line, no internal error, no traceback
    as_expected: bool = False  # ... and names what, where and what to do as the manifest says


def _judge(case: dict[str, Any], args: list[str], status: int, stderr: str) -> tuple[bool, bool]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    clean = status == 65 and len(lines) == 1 and "internal error" not in stderr and "Traceback" not in stderr
    output = args[args.index("--output") + 1] if "--output" in args else ""
    place = case["place"].replace("{input}", args[0]).replace("{output}", output)
    return clean, clean and all(f in lines[0] for f in (case["what"], place, case["fix"]))


def run_case(corpus: Any, case: dict[str, Any], mount_reason: str | None) -> Answer:
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as stack:
        work = Path(d)

        def readonly_dir() -> Path:
            if os.geteuid() != 0:
                ro = work / "ro"
                ro.mkdir()
                ro.chmod(0o555)
                stack.callback(ro.chmod, 0o755)
                return ro
            if mount_reason:
                raise LookupError(mount_reason)
            return stack.enter_context(tmpfs(work / "ro", "64k", readonly=True))

        try:
            args = corpus.prepare(case, work, readonly_dir)
        except LookupError as exc:
            return Answer(None, f"not run here: {exc}")
        if case["id"] == "input_unreadable" and os.geteuid() == 0:
            status, stderr = _run_unreadable_as_root(work, args)
            stdout = ""
        else:
            if case["id"] == "input_unreadable":
                (work / args[0]).chmod(0)
            proc = subprocess.run(
                [sys.executable, "-m", "selection_cli.main", "select", *args],
                cwd=work,
                capture_output=True,
                text=True,
                env=child_env(),
                check=False,
            )
            status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        if status == 0 and not stderr:
            chosen = next((line for line in stdout.splitlines() if line.startswith("selected:")), "")
            return Answer(0, f"(accepted) {chosen}")
        clean, exact = _judge(case, args, status, stderr)
        lines = [line.removeprefix("content-selection: ") for line in stderr.splitlines() if line.strip()]
        shown = " / ".join(lines).replace(str(work), "<dir>") or "(nothing on stderr)"
        return Answer(status, shown, clean, exact)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def render() -> str:
    corpus = _corpus()
    cases = corpus.cases()
    mount_reason = can_mount() if os.geteuid() == 0 else None
    rows = []
    invalid = clean = exact = 0
    for case in cases:
        answer = run_case(corpus, case, mount_reason)
        if not case.get("valid") and answer.status is not None:
            invalid += 1
            clean += answer.one_clean_line
            exact += answer.as_expected
        what = case["note"] or case["id"].replace("_", " ")
        flag = " **known bug**" if case.get("known_bug") else ""
        shown = "—" if answer.status is None else str(answer.status)
        rows.append(f"| `{case['id']}` | {_cell(what)}{flag} | {shown} | {_cell(answer.message)} |")
    head = rf"""# Errors: what the command answers to bad input

<!-- Generated by scripts/make_errors_doc.py from tests/data/bad/cases.json; do not edit by hand. -->

`content-selection select` answers every input it cannot use with **one line on stderr**
(`content-selection: error: <file or path>: <what is wrong, and where>; <what to do>`),
an exit status from `selection_core.errors`, and **nothing written**: no output file, no
temporary file, the input's bytes unchanged.

| Exit status | Meaning | Retry? |
|---|---|---|
| 0 | done; the output was written atomically | — |
| 65 (`EX_DATAERR`) | the input or a path is wrong (not JSON, wrong shape, missing, refused output) | no: fix it |
| 69 (`EX_UNAVAILABLE`) | a service is unreachable (Dask, a store, Prefect API), or an extra missing | once there |
| 74 (`EX_IOERR`) | reading or writing failed (disk full, I/O error); nothing was written | yes, once fixed |
| 130 | stopped by Ctrl-C or SIGTERM (`crawl`: one line says how many WARCs ended; the same command again goes on) | yes |
| 141 | standard output closed by its reader (`... \| head`): the command ends without a word, as `cat` does | — |
| 1 | internal error (a bug): one line that asks for a report | — |
| 2 | usage error (argparse) | no |

Disk faults (ENOSPC, EIO, EACCES/EPERM/EROFS at `os.open`, `os.write`, `os.fsync`, `os.replace`)
are covered by `tests/storage/test_disk_errors.py`: ENOSPC and EIO give 74, permission errors 65.

## The hostile-input corpus

Each row is a case of `tests/data/bad/` (written by `scripts/make_bad_corpus.py`; the
`generated` cases are built at test time), run through the real command from a temporary
directory. **Valid** rows are unusual input that must be accepted (exit 0): blocks and
fields of the wrong type make a candidate unavailable, they are not errors. Rows marked
**known bug** show the current, wrong answer of a defect reported against `selection_core`;
their tests are strict expected failures until it is fixed.

Invalid inputs run here: **{invalid}**. Refused with status 65 in one line (no internal error, no
traceback): **{clean}**. Of those, the message also says what, where and what to do as the manifest
expects (the test's criterion): **{exact}**.

| Case | What | Exit | Message |
|---|---|---|---|
"""
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the committed page")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not DOC.exists() or DOC.read_text(encoding="utf-8") != text:
            print(f"{DOC} is out of date: run python scripts/make_errors_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
