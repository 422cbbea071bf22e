"""``content-selection extract`` and ``pipeline`` (flows/cli_extract.py): outputs, one-line errors, exit codes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selection_cli.extract import extract_main, pipeline_main
from selection_core.errors import EXIT_INVALID_INPUT
from selection_storage import select_file
from tests.support import PAGES, ROOT

ONE_PAGE = "06ee193de4bd611f7fafbab0c59b0f6fe3495093516720632cd093b24c7a0e98.html.gz"
ANOTHER_PAGE = "d90bda7ed14df19574f4ca8b1ccde5752a78f40058af1393e81cc99adb3e8756.html.gz"


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    folder = tmp_path / "news"
    folder.mkdir()
    for name in (ONE_PAGE, ANOTHER_PAGE):
        shutil.copy(PAGES / name, folder / name)
    return folder


def test_extract_writes_the_default_batch_and_prints_a_summary(pages: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert extract_main([str(pages), "--workers", "1"]) == 0
    out = capsys.readouterr()
    batch = pages.parent / "news_extracted.json"
    assert batch.is_file()
    assert out.out.splitlines() == [
        "pages: 2 (0 unreadable)",
        "errors: trafilatura 0, newspaper4k 0, readability 0",
        f"extracted: {batch}",
    ]
    assert out.err == ""  # no library warning or log line reaches the terminal


def test_pipeline_writes_both_batches(pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.jsonl"
    assert pipeline_main([str(pages), "--report", str(report)]) == 0
    extracted = pages.parent / "news_extracted.json"
    selected = pages.parent / "news_extracted_selected.json"
    out = capsys.readouterr().out
    assert f"extracted: {extracted}" in out and f"output: {selected}" in out and f"report: {report}" in out
    # The pipeline's selection is the selection command's, byte for byte.
    reference = tmp_path / "reference.json"
    select_file(extracted, reference)
    assert selected.read_bytes() == reference.read_bytes()
    assert len(report.read_text().splitlines()) == 2


def test_pipeline_with_explicit_paths(pages: Path, tmp_path: Path) -> None:
    extracted, selected = tmp_path / "x.json", tmp_path / "y.json"
    assert pipeline_main([str(pages), "--extracted", str(extracted), "-o", str(selected)]) == 0
    assert extracted.is_file() and selected.is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["{missing}"], "no such file or directory", id="missing-input"),
        pytest.param(
            ["{pages}", "-o", "{tmp}/no-dir/out.json"], "does not exist; create it first", id="output-dir-missing"
        ),
        pytest.param(["{pages}", "-o", "{tmp}"], "is a directory", id="output-is-a-directory"),
        pytest.param(["{pages}", "-o", "{pages}"], "is the input", id="output-is-the-input"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_65(
    pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    args = [a.format(pages=pages, tmp=tmp_path, missing=tmp_path / "missing") for a in argv]
    assert extract_main(args) == EXIT_INVALID_INPUT
    err = capsys.readouterr().err
    assert err.startswith("content-selection extract: error: ") and message in err
    assert err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["news"]


def test_pipeline_checks_every_output_before_extracting(
    pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = pipeline_main([str(pages), "-o", str(tmp_path / "no-dir" / "selected.json")])
    assert code == EXIT_INVALID_INPUT
    assert "does not exist" in capsys.readouterr().err
    assert not (pages.parent / "news_extracted.json").exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_time_limit_must_be_a_positive_number(pages: Path, value: str) -> None:
    with pytest.raises(SystemExit) as info:
        extract_main([str(pages), "--time-limit", value])
    assert info.value.code == 2


def test_a_broken_extractor_install_is_one_line_and_nothing_written(pages: Path, tmp_path: Path) -> None:
    """The library is found but fails to import in the workers (only they import it): one line, exit 1."""
    fake = tmp_path / "site" / "readability"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("injected: this readability install is broken")\n')
    root = ROOT
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(root)]), "HOME": str(tmp_path)}
    output = tmp_path / "out.json"
    code = "import sys; from selection_cli.extract import extract_main; sys.exit(extract_main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(pages), "-o", str(output), "--workers", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "content-selection extract: error: an extraction worker could not start: ImportError: injected: "
        "this readability install is broken; reinstall the extractor libraries with: "
        "pip install 'content-selection[extract]'"
    ]
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["news", "site"]
