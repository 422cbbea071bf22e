"""``output_format="dataset"`` through the flows, ``run``, ``pipeline``, the deployments and ``serve``: the bytes of
``select_file(..., output_format="dataset")``, refusals before Prefect starts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from prefect.utilities.schema_tools import ValidationError, validate

from content_selection.deployments.definitions import build_deployments
from content_selection.flows.select_content import select_content
from content_selection.flows.select_directory import select_directory
from selection_cli.main import main
from selection_core.errors import EXIT_INVALID_INPUT, EXIT_UNAVAILABLE
from selection_engine import select_file
from tests.support import DATA
from tests.support.prefect_fixtures import leftover_files

pytestmark = pytest.mark.usefixtures("no_data_root_env")

GOLDEN = DATA / "aeb_batch_extracted.json"


def _dataset_of(source: Path, tmp_path: Path) -> bytes:
    return select_file(source, tmp_path / "reference.parquet", output_format="dataset").output_path.read_bytes()


def _batch(tmp_path: Path, name: str = "b_extracted.json") -> Path:
    source = tmp_path / name
    source.write_bytes(GOLDEN.read_bytes())
    return source


@pytest.mark.usefixtures("prefect_harness")
def test_select_content_writes_the_dataset_select_writes(tmp_path: Path) -> None:
    source = _batch(tmp_path)
    result = select_content(input_path=str(source), output_format="dataset")
    assert result.output_path == str(tmp_path / "b_extracted_selected.parquet")
    assert Path(result.output_path).read_bytes() == _dataset_of(source, tmp_path)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_the_process_pool_and_the_directory_scan_write_the_same_dataset(tmp_path: Path) -> None:
    source = _batch(tmp_path)
    expected = _dataset_of(source, tmp_path)
    pooled = select_content(
        input_path=str(source),
        output_path=str(tmp_path / "p.parquet"),
        task_runner="process",
        chunk_size=40,
        output_format="dataset",
    )
    assert Path(pooled.output_path).read_bytes() == expected
    assert pooled.read_as == "in 5 chunks of articles, in parallel on the process task runner"

    folder = tmp_path / "scan"
    folder.mkdir()
    (folder / "a_extracted.json").write_bytes(GOLDEN.read_bytes())
    first = select_directory(directory=str(folder), output_format="dataset")
    assert first.selected == [str(folder / "a_extracted_selected.parquet")]
    assert (folder / "a_extracted_selected.parquet").read_bytes() == expected
    assert select_directory(directory=str(folder), output_format="dataset").selected == []  # up to date
    assert len(select_directory(directory=str(folder)).selected) == 1  # the batch format is its own output


@pytest.mark.usefixtures("prefect_harness")
def test_run_writes_the_dataset_and_refuses_before_prefect_what_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mocker: Any
) -> None:
    source = _batch(tmp_path)
    assert main(["run", str(source), "--format", "dataset"]) == 0
    assert (tmp_path / "b_extracted_selected.parquet").read_bytes() == _dataset_of(source, tmp_path)

    assert main(["run", str(source), "--format", "dataset", "-o", str(tmp_path / "x.json")]) == EXIT_INVALID_INPUT
    assert capsys.readouterr().err.endswith("the dataset is written as Parquet; name the output *.parquet\n")

    flow_started = mocker.patch("content_selection.flows.select_content.select_content")
    mocker.patch.dict(sys.modules, {"pyarrow": None, "pyarrow.parquet": None})
    for command in (["run", str(source)], ["pipeline", str(DATA / "pages")], ["crawl", str(tmp_path), "-o", "o"]):
        assert main([*command, "--format", "dataset"]) == EXIT_UNAVAILABLE, command
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pip install 'content-selection[dataset]'" in err, err
    flow_started.assert_not_called()
    assert (
        leftover_files(tmp_path, {source, tmp_path / "b_extracted_selected.parquet", tmp_path / "reference.parquet"})
        == []
    )


def test_serve_format_is_the_default_of_every_deployment_that_writes_an_output() -> None:
    built = {
        (d.flow_name, d.name): d
        for d in build_deployments(data_root="/data", output_format="dataset", after_flow=("crawl-news", "output_path"))
    }
    writers = [
        ("select-content", "manual"),
        ("select-content", "triggered"),
        ("select-content", "after-flow"),
        ("select-directory", "scheduled"),
        ("extract-crawl", "manual"),
    ]
    assert all(built[key].parameters["output_format"] == "dataset" for key in writers)
    assert "output_format" not in built[("extract-inbox", "scheduled")].parameters  # it writes extracted batches
    plain = {(d.flow_name, d.name): d for d in build_deployments(data_root="/data")}
    assert all("output_format" not in plain[key].parameters for key in writers if key in plain)
    for key in writers[:2]:
        schema = built[key]._parameter_openapi_schema.model_dump()
        validate(built[key].parameters, schema, raise_on_error=True, ignore_required=True)  # the server's check
        field = schema["properties"]["output_format"]
        assert (field["enum"], field["default"]) == (["batch", "dataset"], "batch")  # a drop-down in the Run form
        with pytest.raises(ValidationError):
            validate(
                {**built[key].parameters, "output_format": "csv"}, schema, raise_on_error=True, ignore_required=True
            )
