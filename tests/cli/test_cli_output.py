"""What the `select` command shows a person: summary, report, progress bar, help."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from selection_cli.main import main
from selection_cli.progress import PROGRESS_MIN_ARTICLES, ProgressBar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _article(i: int) -> dict:
    text = f"story number {i} about the city council vote on tuesday evening"
    return {
        "id": i,
        "trafilatura": {"text": text + " share this article", "error": None},
        "newspaper4k": {"text": text, "error": None},
        "readability": {"cleaned_text": text, "error": None},
    }


def test_progress_bar_draws_on_a_terminal_for_long_batches() -> None:
    term = _Terminal()
    bar = ProgressBar(term)
    total = PROGRESS_MIN_ARTICLES * 2
    bar(total // 2, total)
    bar(total, total)
    out = term.getvalue()
    assert f"{total}/{total}" in out and out.endswith("\n")
    assert "[" + "#" * 30 + "]" in out


def test_progress_bar_redraws_once_per_percent() -> None:
    term = _Terminal()
    bar = ProgressBar(term, "extracting", width=0, min_total=1, unit="pages")
    for done in range(201):
        bar(done, 200)
    assert term.getvalue().count("\r") == 101
    assert term.getvalue().split("\r")[-1] == "extracting 200/200 pages\n"


@pytest.mark.parametrize(
    ("stream", "total"),
    [(io.StringIO(), PROGRESS_MIN_ARTICLES * 2), (_Terminal(), PROGRESS_MIN_ARTICLES - 1)],
    ids=["not-a-terminal", "short-batch"],
)
def test_progress_bar_stays_silent(stream: io.StringIO, total: int) -> None:
    bar = ProgressBar(stream)
    bar(total, total)
    assert stream.getvalue() == ""


def test_select_prints_summary_and_writes_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "b_extracted.json"
    inp.write_bytes(orjson.dumps({"articles": [_article(i) for i in range(3)]}))
    report = tmp_path / "report.jsonl"
    assert main(["select", str(inp), "--report", str(report)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "articles: 3"
    assert out[1] == "selected: trafilatura 0, newspaper4k 3, readability 0"
    assert out[-1] == f"report: {report}"
    lines = report.read_bytes().splitlines()
    assert [orjson.loads(line)["index"] for line in lines] == [0, 1, 2]
    assert {orjson.loads(line)["selected_extractor"] for line in lines} == {"newspaper4k"}


def test_report_path_equal_to_output_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "b.json"
    inp.write_bytes(orjson.dumps({"articles": [_article(0)]}))
    out = tmp_path / "o.json"
    assert main(["select", str(inp), "-o", str(out), "--report", str(out)]) == 65
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "report path is the output path" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "select" in capsys.readouterr().out
