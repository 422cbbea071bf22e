"""``content-selection extract`` and ``pipeline`` (selection_cli/extract.py): outputs, one-line errors, exit codes.

``pipeline`` runs the flow ``extract-and-select``: its tests use the session's
Prefect test harness, and read the run and its artifacts back through the API.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pyarrow.parquet as pq
import pytest

import selection_core as sc
from selection_cli.main import main
from selection_cli.select import format_summary
from selection_core.config import TEXT_FIELDS
from selection_core.errors import EXIT_INVALID_INPUT
from selection_engine import select_file
from tests.support import DATA, PAGES, ROOT
from tests.support.prefect_fixtures import artifacts_of, env_without_prefect_api, extract_and_select_artifact_keys

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
    assert main(["extract", str(pages), "--workers", "1"]) == 0
    out = capsys.readouterr()
    batch = pages.parent / "news_extracted.json"
    assert batch.is_file()
    assert out.out.splitlines() == [
        "pages: 2 (0 unreadable)",
        "errors: trafilatura 0, newspaper4k 0, readability 0",
        f"extracted: {batch}",
    ]
    assert out.err == ""  # no library warning or log line reaches the terminal


def test_extract_to_a_jsonl_name_writes_json_lines_and_the_record(
    pages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = pages.parent / "news_extracted.jsonl"
    assert main(["extract", str(pages), "--workers", "1", "-o", str(batch)]) == 0
    out = capsys.readouterr()
    record = pages.parent / "news_extracted.extraction.json"
    assert out.out.splitlines()[-2:] == [f"extracted: {batch}", f"record: {record}"]
    articles = sc.parse_lines(batch.read_bytes(), str(batch))
    assert [a["path"] for a in articles] == sorted([ONE_PAGE, ANOTHER_PAGE])
    assert orjson.loads(record.read_bytes())["extraction"]["pages"] == 2
    assert sorted(p.name for p in pages.parent.iterdir()) == ["news", record.name, batch.name]


@pytest.fixture
def flow_env(prefect_harness: None) -> Iterator[None]:
    """The session's Prefect test harness; the settings ``pipeline`` puts in the environment are undone after."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def flow_run_id(out: str) -> UUID:
    """The id on the ``flow run:`` line ``pipeline`` prints last."""
    last = out.splitlines()[-1]
    assert last.startswith("flow run: "), out
    return UUID(last.removeprefix("flow run: "))


def read_flow_run(run_id: UUID) -> tuple[Any, str]:
    """The flow run and the name of its flow, through the API."""
    from prefect import get_client

    async def read() -> tuple[Any, str]:
        async with get_client() as client:
            run = await client.read_flow_run(run_id)
            return run, (await client.read_flow(run.flow_id)).name

    return asyncio.run(read())


def extract_then_select(pages: str, folder: Path, report: bool = False) -> tuple[Path, Path, Path | None, str]:
    """What ``extract PAGES`` then ``select`` write in ``folder`` (the reference of the pipeline's bytes),
    and the summary ``select`` prints."""
    folder.mkdir()
    extracted, selected = folder / "extracted.json", folder / "selected.json"
    assert main(["extract", pages, "-o", str(extracted)]) == 0
    report_path = folder / "report.jsonl" if report else None
    return extracted, selected, report_path, format_summary(select_file(extracted, selected, report_path).summary)


@pytest.mark.usefixtures("flow_env")
def test_pipeline_writes_both_batches(pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.jsonl"
    assert main(["pipeline", str(pages), "--report", str(report), "--workers", "1"]) == 0
    extracted = pages.parent / "news_extracted.json"
    selected = pages.parent / "news_extracted_selected.json"
    out = capsys.readouterr().out
    # The pipeline writes what `extract` then `select` write, byte for byte, and prints what they print.
    ref_extracted, ref_selected, ref_report, selection = extract_then_select(
        str(pages), tmp_path / "reference", report=True
    )
    assert out.splitlines()[:-1] == [
        "pages: 2 (0 unreadable)",
        "errors: trafilatura 0, newspaper4k 0, readability 0",
        f"extracted: {extracted}",
        *selection.splitlines(),
        f"output: {selected}",
        f"report: {report}",
    ]
    assert selection.startswith("articles: 2\nselected: ")
    assert extracted.read_bytes() == ref_extracted.read_bytes()
    assert selected.read_bytes() == ref_selected.read_bytes()
    assert ref_report is not None and report.read_bytes() == ref_report.read_bytes()


@pytest.mark.usefixtures("flow_env")
def test_pipeline_is_a_run_of_the_flow_with_its_artifacts(
    pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from selection_core.evidence import SCORES_ARTIFACT_KEY
    from selection_extraction.artifacts import (
        PAGES_ARTIFACT_KEY,
    )

    extracted, selected = tmp_path / "x.json", tmp_path / "y.json"
    assert main(["pipeline", str(pages), "--extracted", str(extracted), "-o", str(selected)]) == 0
    run_id = flow_run_id(capsys.readouterr().out)
    run, flow_name = read_flow_run(run_id)
    assert flow_name == "extract-and-select" and run.name == "extract-and-select-news"
    assert run.state is not None and run.state.is_completed()
    assert run.parameters["extracted_path"] == str(extracted) and run.parameters["output_path"] == str(selected)
    by_key = {a.key: a for a in asyncio.run(artifacts_of(run_id))}
    assert set(by_key) == extract_and_select_artifact_keys()
    assert "2 of 2 pages" in by_key[PAGES_ARTIFACT_KEY].description
    assert "2 of 2 articles" in by_key[SCORES_ARTIFACT_KEY].description
    assert extracted.is_file() and selected.is_file()


@pytest.mark.usefixtures("flow_env")
def test_pipeline_on_a_web_archive_writes_what_extract_then_select_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warc = tmp_path / "crawl" / "pages.warc.gz"
    warc.parent.mkdir()
    shutil.copy(DATA / "warc" / "pages.warc.gz", warc)
    assert main(["pipeline", str(warc)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("WARC records: html 8, warcinfo 1, request 6,")
    ref_extracted, ref_selected, _, _ = extract_then_select(str(warc), tmp_path / "reference")
    assert (warc.parent / "pages_extracted.json").read_bytes() == ref_extracted.read_bytes()
    assert (warc.parent / "pages_extracted_selected.json").read_bytes() == ref_selected.read_bytes()

    # as a dataset: the selected batch's text, one row an article, each WARC page's date and file
    assert main(["pipeline", str(warc), "--format", "dataset", "--extracted", str(tmp_path / "x.jsonl")]) == 0
    rows = pq.read_table(tmp_path / "x_selected.parquet").to_pylist()
    articles = orjson.loads(ref_selected.read_bytes())["articles"]
    assert [r["text"] for r in rows] == [
        a[a["selected_extractor"]][TEXT_FIELDS[a["selected_extractor"]]] for a in articles
    ]
    assert [(r["id"], r["date"], r["file_path"]) for r in rows] == [
        (a["id"], a["warc_date"], a["path"]) for a in articles
    ]


#: Runs ``content-selection ARGS`` and says on stdout whether Prefect was imported.
_MAIN_AND_PREFECT = (
    "import sys; from selection_cli.main import main; status = main(sys.argv[1:]); "
    "print('prefect imported:', 'prefect' in sys.modules); sys.exit(status)"
)


def refused_pipeline_lines(args: list[str], cwd: Path) -> list[str]:
    """The stderr lines of ``pipeline ARGS`` in a fresh process, which must exit 65 without importing Prefect."""
    done = subprocess.run(
        [sys.executable, "-c", _MAIN_AND_PREFECT, "pipeline", *args],
        cwd=cwd,
        env=env_without_prefect_api(PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_INVALID_INPUT, done.stderr
    assert done.stdout == "prefect imported: False\n"
    return done.stderr.splitlines()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["{tmp}/missing"],
            "{tmp}/missing: no such file or directory; give a folder of .html/.htm/.html.gz pages, "
            "a .warc/.warc.gz file or a JSON Lines manifest",
            id="missing-pages",
        ),
        pytest.param(
            ["missing"],
            "missing: no such file or directory; give a folder of .html/.htm/.html.gz pages, "
            "a .warc/.warc.gz file or a JSON Lines manifest",
            id="missing-pages-relative",
        ),
        pytest.param(
            ["{pages}", "--report", "{tmp}/no-dir/report.jsonl"],
            "{tmp}/no-dir/report.jsonl: the directory {tmp}/no-dir does not exist; create it first",
            id="report-dir-missing",
        ),
        pytest.param(["{pages}", "--data-root", "{pages}/.."], "outside the data root", id="outside-the-data-root"),
    ],
)
def test_pipeline_refuses_a_bad_path_in_one_line_without_starting_prefect(
    pages: Path, tmp_path: Path, argv: list[str], message: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    args = [a.format(pages=pages, tmp=tmp_path).replace(f"{pages}/..", str(root)) for a in argv]
    lines = refused_pipeline_lines(args, tmp_path)
    assert len(lines) == 1 and lines[0].startswith("content-selection: error: ")
    assert message.format(tmp=tmp_path) in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["news", "root"]


@pytest.mark.parametrize(
    ("make", "argv", "message"),
    [
        pytest.param(
            lambda d: d.mkdir(),
            ["{input}"],
            "{input}: no .html, .htm, .html.gz, .htm.gz page or .warc, .warc.gz file in this directory",
            id="empty-folder",
        ),
        pytest.param(
            lambda d: d.write_text('{"id": "a"}\n'),
            ["{input}"],
            '{input}: line 1 has no "path" string; give the page file\'s path',
            id="malformed-manifest",
        ),
        pytest.param(
            lambda d: d.write_text('{"id": "a"}\n'),
            ["{pages}", "--report", "{pages}_extracted.json"],
            "is the input file itself; the input is never overwritten, choose another --report",
            id="report-is-the-extracted-batch",
        ),
    ],
)
def test_pipeline_refuses_a_bad_listing_or_option_before_prefect_starts(
    pages: Path, tmp_path: Path, make: Any, argv: list[str], message: str
) -> None:
    """What ``extract`` refuses about the input's listing, ``pipeline`` refuses too, before the
    embedded server starts, and a refused option is named as the user wrote it."""
    bad = tmp_path / "input"
    make(bad)
    args = [a.format(pages=pages, input=bad) for a in argv]
    lines = refused_pipeline_lines(args, tmp_path)
    assert len(lines) == 1 and message.format(input=bad) in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input", "news"]


@pytest.mark.slow
def test_pipeline_in_a_fresh_process_prints_its_lines_and_nothing_on_stderr(pages: Path, tmp_path: Path) -> None:
    """The embedded API, started by the command itself: no Prefect log line, notice or warning on stderr."""
    home = tmp_path / "prefect-home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "selection_cli.main", "pipeline", str(pages), "--workers", "1"],
        cwd=tmp_path,
        env=env_without_prefect_api(PYTHONPATH=str(ROOT), PREFECT_HOME=str(home)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[2] == f"extracted: {pages.parent / 'news_extracted.json'}"
    assert lines[-2] == f"output: {pages.parent / 'news_extracted_selected.json'}"
    flow_run_id(done.stdout)


#: ``content-selection ARGS`` with a bug injected into the flow's selection step.
_MAIN_WITH_A_BUG = (
    "import sys, selection_engine.engine\n"
    "def broken(*args, **kwargs):\n"
    "    raise RuntimeError('injected bug')\n"
    "selection_engine.engine.select_file = broken\n"
    "from selection_cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.slow
def test_a_bug_inside_the_run_is_shown_as_prefect_logged_it_then_one_line(pages: Path, tmp_path: Path) -> None:
    """Not a refusal: Prefect's traceback of the run is shown (as for ``run``), then the command's line."""
    home = tmp_path / "prefect-home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _MAIN_WITH_A_BUG, "pipeline", str(pages), "--workers", "1"],
        cwd=tmp_path,
        # The injection imports Prefect before the command could set its console level: set here.
        env=env_without_prefect_api(
            PYTHONPATH=str(ROOT), PREFECT_HOME=str(home), PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL="WARNING"
        ),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[-1].startswith("content-selection: internal error: RuntimeError: injected bug")
    assert "Traceback (most recent call last):" in done.stderr
    assert "RuntimeError: injected bug" in lines[:-1]
    assert not any("| INFO " in line for line in lines)
    assert (pages.parent / "news_extracted.json").is_file()  # the extraction had finished
    assert not (pages.parent / "news_extracted_selected.json").exists()


@pytest.mark.parametrize("value", ["3601", "1e9"])
def test_pipeline_time_limit_is_bounded_as_the_flow_bounds_it(pages: Path, value: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["pipeline", str(pages), "--time-limit", value])
    assert info.value.code == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["{missing}"], "no such file or directory", id="missing-input"),
        pytest.param(
            ["{pages}", "-o", "{tmp}/no-dir/out.json"], "does not exist; create it first", id="output-dir-missing"
        ),
        pytest.param(["{pages}", "-o", "{tmp}"], "is a directory", id="output-is-a-directory"),
        # The input folder itself: refused as a directory (no folder can be written), before it is the input.
        pytest.param(["{pages}", "-o", "{pages}"], "is a directory", id="output-is-the-input"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_65(
    pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    args = [a.format(pages=pages, tmp=tmp_path, missing=tmp_path / "missing") for a in argv]
    assert main(["extract", *args]) == EXIT_INVALID_INPUT
    err = capsys.readouterr().err
    assert err.startswith("content-selection: error: ") and message in err
    assert err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["news"]


@pytest.mark.usefixtures("no_data_root_env")
def test_pipeline_checks_every_output_before_extracting(
    pages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["pipeline", str(pages), "-o", str(tmp_path / "no-dir" / "selected.json")])
    assert code == EXIT_INVALID_INPUT
    assert "does not exist" in capsys.readouterr().err
    assert not (pages.parent / "news_extracted.json").exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_time_limit_must_be_a_positive_number(pages: Path, value: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["extract", str(pages), "--time-limit", value])
    assert info.value.code == 2


def test_a_broken_extractor_install_is_one_line_and_nothing_written(pages: Path, tmp_path: Path) -> None:
    """The library is found but fails to import in the workers (only they import it): one line, exit 1."""
    fake = tmp_path / "site" / "readability"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("injected: this readability install is broken")\n')
    root = ROOT
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(root)]), "HOME": str(tmp_path)}
    output = tmp_path / "out.json"
    code = "import sys; from selection_cli.main import main; sys.exit(main(['extract', *sys.argv[1:]]))"
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
        "content-selection: error: an extraction worker could not start: ImportError: injected: "
        "this readability install is broken; reinstall the extractor libraries with: "
        "pip install 'content-selection[extract]'"
    ]
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["news", "site"]
