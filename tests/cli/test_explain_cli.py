"""``content-selection explain``: one article's decision in the terminal, and one line for every mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import selection_core as sc
from selection_cli.explain import explain_text
from selection_cli.main import main
from tests.support import ROOT
from tests.support.prefect_fixtures import make_batch


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    path = tmp_path / "b_extracted.json"
    path.write_text(json.dumps(make_batch(4)))
    return path


@pytest.mark.parametrize("how", [["--index", "2"], ["--id", "a2"]], ids=["by-index", "by-id"])
def test_explain_prints_the_decision(batch: Path, how: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(batch), *how]) == 0
    out, err = capsys.readouterr()
    article = make_batch(4)["articles"][2]
    assert out == explain_text(article, sc.select_article(article, 2), batch.name, 4) + "\n"
    assert out.startswith(f"Article 2 of 4 in {batch.name}\n  id   a2\n  url  https://news.example/2\n")
    assert "Why: " in out and err == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--index", "4"], "no article at index 4; the batch has 4 articles (indexes 0 to 3)", id="index"),
        pytest.param(["--id", "nope"], "no article has the id 'nope'; check the id, or use --index", id="unknown-id"),
    ],
)
def test_what_is_not_there_exits_65_in_one_line(
    batch: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", str(batch), *args]) == 65
    out, err = capsys.readouterr()
    assert out == "" and err == f"content-selection: error: {batch}: {message}\n"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        pytest.param(None, "no such file", id="missing-file"),
        pytest.param(b'{"articles": [{"id": "a0"}, {"id": ', "never ends", id="truncated"),
        pytest.param(b'{"articles": {}}', "articles", id="wrong-shape"),
    ],
)
def test_a_bad_batch_exits_65_in_one_line(
    tmp_path: Path, raw: bytes | None, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.json"
    if raw is not None:
        path.write_bytes(raw)
    assert main(["explain", str(path), "--index", "0"]) == 65
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("content-selection: error: ") and fragment in err


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="neither-index-nor-id"),
        pytest.param(["--index", "1", "--id", "a1"], id="both"),
        pytest.param(["--index", "-1"], id="negative-index"),
        pytest.param(["--index", "one"], id="not-a-number"),
    ],
)
def test_usage_errors_exit_2(batch: Path, args: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["explain", str(batch), *args])
    assert exit_.value.code == 2


def test_the_command_in_a_process(batch: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "selection_cli.main", "explain", str(batch), "--id", "a1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Article 1 of 4 in {batch.name}\n")
    assert "Selected: newspaper4k" in done.stdout
