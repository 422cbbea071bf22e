"""Where a run may read and write (:mod:`selection_storage.paths`): confinement to the data root and the run's paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selection_core.errors import InvalidBatchError, OutputPathError, UnsafePathError
from selection_storage.atomic import HOST_TAG, STAGED_NAME, temporary_name
from selection_storage.paths import (
    DATA_ROOT_ENV,
    confine,
    data_root_in_force,
    name_once,
    resolve_run_paths,
    selected_path,
)

pytestmark = pytest.mark.usefixtures("no_data_root_env")


# --- path confinement --------------------------------------------------------------


@pytest.fixture
def root_with_outside(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "in_extracted.json").write_text("{}")
    (outside / "secret_extracted.json").write_text("{}")
    return root.resolve(), outside.resolve()


def test_confine_accepts_a_path_inside_the_root(root_with_outside: tuple[Path, Path]) -> None:
    root, _ = root_with_outside
    assert confine(str(root / "in_extracted.json"), root, "input", DATA_ROOT_ENV) == root / "in_extracted.json"


def test_confine_resolves_relative_paths_from_the_root(root_with_outside: tuple[Path, Path]) -> None:
    root, _ = root_with_outside
    assert confine("in_extracted.json", root, "input", DATA_ROOT_ENV) == root / "in_extracted.json"


@pytest.mark.parametrize(
    "make_path",
    [
        pytest.param(lambda root, outside: str(outside / "secret_extracted.json"), id="absolute-outside"),
        pytest.param(
            lambda root, outside: str(root / ".." / "outside" / "secret_extracted.json"), id="dotdot-absolute"
        ),
        pytest.param(lambda root, outside: "../outside/secret_extracted.json", id="dotdot-relative"),
        pytest.param(lambda root, outside: "/etc/passwd", id="system-file"),
        pytest.param(lambda root, outside: str(root) + "-sibling/x_extracted.json", id="prefix-sibling"),
    ],
)
def test_confine_refuses_paths_that_leave_the_root(root_with_outside: tuple[Path, Path], make_path) -> None:
    root, outside = root_with_outside
    with pytest.raises(UnsafePathError, match="outside the data root"):
        confine(make_path(root, outside), root, "input", DATA_ROOT_ENV)


def test_confine_follows_symlinks_out_of_the_root(root_with_outside: tuple[Path, Path]) -> None:
    root, outside = root_with_outside
    (root / "link_extracted.json").symlink_to(outside / "secret_extracted.json")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    for path in (root / "link_extracted.json", root / "linkdir" / "secret_extracted.json"):
        with pytest.raises(UnsafePathError, match="outside the data root"):
            confine(str(path), root, "input", DATA_ROOT_ENV)


def test_confine_accepts_symlinks_that_stay_inside(root_with_outside: tuple[Path, Path]) -> None:
    root, _ = root_with_outside
    (root / "alias_extracted.json").symlink_to(root / "in_extracted.json")
    assert confine(str(root / "alias_extracted.json"), root, "input", DATA_ROOT_ENV) == root / "in_extracted.json"


@pytest.mark.parametrize(
    "bad", [pytest.param("", id="empty"), pytest.param("   ", id="blank"), pytest.param("a\x00b", id="nul")]
)
def test_confine_refuses_malformed_paths(root_with_outside: tuple[Path, Path], bad: str) -> None:
    root, _ = root_with_outside
    with pytest.raises(UnsafePathError, match="empty or malformed"):
        confine(bad, root, "input", DATA_ROOT_ENV)


def test_default_and_temporary_names() -> None:
    assert selected_path("data/batch_extracted.json").as_posix() == "data/batch_extracted_selected.json"
    assert selected_path("data/batch_extracted.jsonl").as_posix() == "data/batch_extracted_selected.jsonl"
    for batch in ("data/batch_extracted.json", "data/batch_extracted.jsonl"):
        assert selected_path(batch, "dataset").as_posix() == "data/batch_extracted_selected.parquet"
    name = temporary_name(Path("out/batch.json"), "0123456789abcdef")
    assert name.as_posix() == f"out/.batch.json.{HOST_TAG}-{os.getpid()}.0123456789abcdef.cs-tmp"
    part = temporary_name(Path("out/batch.json"), "0123456789abcdef", 10)
    assert part.name.endswith(".0123456789abcdef-0000000a.cs-tmp")
    assert STAGED_NAME.match(name.name)["part"] is None and STAGED_NAME.match(part.name)["part"] == "0000000a"


@pytest.mark.parametrize(
    ("output", "output_format", "message"),
    [
        pytest.param(
            "o.json", "dataset", r"o\.json: the dataset is written as Parquet; name the output \*\.parquet", id="json"
        ),
        pytest.param("o.jsonl", "dataset", r"the dataset is written as Parquet", id="jsonl"),
        pytest.param(
            "o.parquet",
            "batch",
            r"the selected batch is JSON, not Parquet; for Parquet give --format dataset",
            id="parquet",
        ),
    ],
)
def test_an_output_named_for_another_format_is_refused(
    tmp_path: Path, output: str, output_format: str, message: str
) -> None:
    source = tmp_path / "b_extracted.json"
    source.write_bytes(b'{"articles": []}')
    with pytest.raises(OutputPathError, match=message):
        resolve_run_paths(str(source), str(tmp_path / output), output_format=output_format)
    assert resolve_run_paths(str(source), str(tmp_path / "o.data"), output_format="dataset").output_format == "dataset"


def test_name_once() -> None:
    assert name_once("/in/a.json", "/in/a.json: not JSON") == "/in/a.json: not JSON"
    assert name_once("/in/b", "TimeoutError") == "/in/b: TimeoutError"


def test_data_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError, match="does not exist"):
        data_root_in_force(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        data_root_in_force(str(tmp_path / "file"))


def test_run_paths_require_a_root_when_asked(tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError, match="no data root is configured"):
        resolve_run_paths(str(tmp_path / "b_extracted.json"), require_data_root=True)


def test_run_paths_take_the_root_from_the_environment(data_root: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere_extracted.json").write_text("{}")
    with pytest.raises(UnsafePathError):
        resolve_run_paths(str(tmp_path / "elsewhere_extracted.json"))
    (data_root / "b_extracted.json").write_text("{}")
    paths = resolve_run_paths("b_extracted.json", report_path="b.jsonl")
    assert paths.input == data_root.resolve() / "b_extracted.json"
    assert paths.output == data_root.resolve() / "b_extracted_selected.json"
    assert paths.report == data_root.resolve() / "b.jsonl"
    assert paths.data_root == data_root.resolve()


def test_run_paths_confine_output_and_report(data_root: Path, tmp_path: Path) -> None:
    (data_root / "b_extracted.json").write_text("{}")
    with pytest.raises(UnsafePathError, match="output path"):
        resolve_run_paths("b_extracted.json", output_path=str(tmp_path / "out.json"))
    with pytest.raises(UnsafePathError, match="report path"):
        resolve_run_paths("b_extracted.json", report_path="../r.jsonl")
    # A pre-existing default output that is a symlink out of the root is refused too.
    (data_root / "b_extracted_selected.json").symlink_to(tmp_path / "victim.json")
    with pytest.raises(UnsafePathError, match="output path"):
        resolve_run_paths("b_extracted.json")


def test_run_paths_without_root_use_the_core_checks(tmp_path: Path) -> None:
    source = tmp_path / "b_extracted.json"
    source.write_text("{}")
    paths = resolve_run_paths(str(source))
    assert (paths.input, paths.output, paths.report, paths.data_root) == (
        source,
        tmp_path / "b_extracted_selected.json",
        None,
        None,
    )
    with pytest.raises(OutputPathError, match="input file itself"):
        resolve_run_paths(str(source), output_path=str(source))
    with pytest.raises(OutputPathError, match="report path is the output path"):
        resolve_run_paths(str(source), output_path=str(tmp_path / "o.json"), report_path=str(tmp_path / "o.json"))
    with pytest.raises(OutputPathError, match="does not exist"):
        resolve_run_paths(str(source), output_path=str(tmp_path / "missing" / "o.json"))


def test_run_paths_name_a_missing_input_before_the_output_s_folder(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "b_extracted.json"
    with pytest.raises(InvalidBatchError, match=f"^{missing}: no such file; check the input path$"):
        resolve_run_paths(str(missing))
    # An input that a step before the selection writes (extract, then select) is not asked for yet.
    with pytest.raises(OutputPathError, match="the directory .*missing does not exist; create it first"):
        resolve_run_paths(str(missing), input_exists=False)


# --- the refusal names the setting the root came from ------------------------------


@pytest.mark.parametrize(
    ("option", "named"),
    [
        pytest.param(None, "the data_root parameter", id="flow-parameter"),
        pytest.param("--data-root", "--data-root", id="command-line-option"),
    ],
)
def test_a_refusal_names_the_given_data_root_as_it_was_given(tmp_path: Path, option: str | None, named: str) -> None:
    (tmp_path / "root").mkdir()
    options = {} if option is None else {"option": option}
    with pytest.raises(UnsafePathError, match=f"change {named}\\)$"):
        resolve_run_paths(str(tmp_path / "b_extracted.json"), data_root=str(tmp_path / "root"), **options)
    with pytest.raises(UnsafePathError, match=f"point {named} at an existing directory$"):
        resolve_run_paths("b_extracted.json", data_root=str(tmp_path / "missing"), **options)


def test_a_refusal_names_the_environment_variable_when_it_set_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "root").mkdir()
    monkeypatch.setenv("CONTENT_SELECTION_DATA_ROOT", str(tmp_path / "root"))
    with pytest.raises(UnsafePathError, match=r"change CONTENT_SELECTION_DATA_ROOT\)$"):
        resolve_run_paths(str(tmp_path / "b_extracted.json"), option="--data-root")
