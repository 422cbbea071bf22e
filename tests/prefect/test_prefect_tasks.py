"""Task logic through ``.fn()`` (no Prefect API), and the pure helpers of the Prefect stage."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import orjson
import pytest

import selection_core as sc
from content_selection.events import (
    BATCH_EXTRACTED_EVENT,
    BATCH_PATH_LABEL,
    INPUT_PATH_TEMPLATE,
    batch_extracted_resource,
    batch_extracted_trigger,
    emit_batch_extracted,
)
from selection_core.errors import InvalidBatchError, OutputPathError, ReadError, UnsafePathError, WriteError
from selection_storage.directory import find_batches, is_stale
from selection_storage.files import sha256_file
from selection_storage.paths import confine, resolve_data_root, resolve_run_paths
from selection_storage.transient import is_transient_io_error
from tasks.artifacts import component_versions, score_rows, scores_description, summary_markdown
from tasks.batch import extract_batch, persist_batch, write_selection_report
from tasks.discover import find_stale_batches
from tasks.select import select_extractors
from tests.support.prefect_fixtures import expected_output, make_batch

pytestmark = pytest.mark.usefixtures("no_data_root_env")

# --- retry classification ---------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        pytest.param(OSError(errno.EIO, "Input/output error"), True, id="plain-EIO"),
        pytest.param(OSError(errno.EAGAIN, "Try again"), True, id="plain-EAGAIN"),
        pytest.param(TimeoutError(errno.ETIMEDOUT, "timed out"), True, id="plain-ETIMEDOUT"),
        pytest.param(ReadError("x: read failed", errno.EIO), True, id="core-ReadError"),
        pytest.param(WriteError("x: write failed", errno.EIO, transient=True), True, id="core-WriteError-transient"),
        pytest.param(WriteError("x: no space", errno.ENOSPC), False, id="core-WriteError-ENOSPC"),
        pytest.param(FileNotFoundError(errno.ENOENT, "missing"), False, id="plain-ENOENT"),
        pytest.param(PermissionError(errno.EACCES, "denied"), False, id="plain-EACCES"),
        pytest.param(InvalidBatchError("x: not JSON"), False, id="InvalidBatchError"),
        pytest.param(OutputPathError("x: is the input"), False, id="OutputPathError"),
        pytest.param(UnsafePathError("x: outside"), False, id="UnsafePathError"),
        pytest.param(ValueError("boom"), False, id="ValueError"),
        pytest.param(RuntimeError("boom"), False, id="RuntimeError"),
    ],
)
def test_only_transient_io_errors_are_retried(exc: BaseException, transient: bool) -> None:
    assert is_transient_io_error(exc) is transient


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
    assert confine(str(root / "in_extracted.json"), root, "input") == root / "in_extracted.json"


def test_confine_resolves_relative_paths_from_the_root(root_with_outside: tuple[Path, Path]) -> None:
    root, _ = root_with_outside
    assert confine("in_extracted.json", root, "input") == root / "in_extracted.json"


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
        confine(make_path(root, outside), root, "input")


def test_confine_follows_symlinks_out_of_the_root(root_with_outside: tuple[Path, Path]) -> None:
    root, outside = root_with_outside
    (root / "link_extracted.json").symlink_to(outside / "secret_extracted.json")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    for path in (root / "link_extracted.json", root / "linkdir" / "secret_extracted.json"):
        with pytest.raises(UnsafePathError, match="outside the data root"):
            confine(str(path), root, "input")


def test_confine_accepts_symlinks_that_stay_inside(root_with_outside: tuple[Path, Path]) -> None:
    root, _ = root_with_outside
    (root / "alias_extracted.json").symlink_to(root / "in_extracted.json")
    assert confine(str(root / "alias_extracted.json"), root, "input") == root / "in_extracted.json"


@pytest.mark.parametrize(
    "bad", [pytest.param("", id="empty"), pytest.param("   ", id="blank"), pytest.param("a\x00b", id="nul")]
)
def test_confine_refuses_malformed_paths(root_with_outside: tuple[Path, Path], bad: str) -> None:
    root, _ = root_with_outside
    with pytest.raises(UnsafePathError, match="empty or malformed"):
        confine(bad, root, "input")


def test_data_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError, match="does not exist"):
        resolve_data_root(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("")
    with pytest.raises(UnsafePathError, match="not a directory"):
        resolve_data_root(str(tmp_path / "file"))


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


# --- extract, select, persist -------------------------------------------------------


def test_extract_reads_validates_and_fingerprints(batch_factory) -> None:
    path = batch_factory(n_articles=4)
    batch = extract_batch.fn(path)
    assert batch.article_count == 4
    assert batch.doc == make_batch(4)
    assert batch.size_bytes == path.stat().st_size
    assert batch.sha256 == sha256_file(path)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[]", id="root-not-object"),
        pytest.param(b'{"articles": {}}', id="articles-not-list"),
        pytest.param(b'{"articles": [1]}', id="article-not-object"),
    ],
)
def test_extract_refuses_invalid_batches(batch_factory, raw: bytes) -> None:
    with pytest.raises(InvalidBatchError):
        extract_batch.fn(batch_factory(raw=raw))


def test_select_persist_and_report_match_the_core(batch_factory, tmp_path: Path) -> None:
    path = batch_factory(n_articles=5)
    batch = extract_batch.fn(path)
    selections = select_extractors.fn(batch.doc, batch_name=path.name)
    assert [s.index for s in selections] == list(range(5))
    output = tmp_path / "out.json"
    written = persist_batch.fn(batch.doc, selections, output)
    assert output.read_bytes() == expected_output(path)
    assert written.sha256 == sha256_file(output)
    assert written.size_bytes == output.stat().st_size
    # Applying the same selections again (a retry) writes the same bytes.
    persist_batch.fn(batch.doc, selections, output)
    assert output.read_bytes() == expected_output(path)

    report = write_selection_report.fn(selections, tmp_path / "report.jsonl")
    lines = report.read_bytes().splitlines()
    assert [orjson.loads(line) for line in lines] == [s.to_dict() for s in selections]


# --- artifacts content --------------------------------------------------------------


def _selections(n: int) -> tuple[dict, list[sc.Selection]]:
    doc = make_batch(n)
    return doc, sc.select_articles(doc["articles"])


@pytest.mark.parametrize(
    ("n_articles", "max_rows", "expected_rows"),
    [
        pytest.param(0, 200, 0, id="empty-batch"),
        pytest.param(3, 200, 3, id="under-cap"),
        pytest.param(5, 5, 5, id="at-cap"),
        pytest.param(7, 2, 2, id="over-cap"),
        pytest.param(4, 0, 0, id="cap-zero"),
    ],
)
def test_score_rows_are_capped(n_articles: int, max_rows: int, expected_rows: int) -> None:
    doc, selections = _selections(n_articles)
    rows = score_rows(doc, selections, max_rows)
    assert [row["index"] for row in rows] == list(range(expected_rows))


def test_score_rows_carry_the_explanation() -> None:
    doc, selections = _selections(2)
    rows = score_rows(doc, selections, 10)
    assert list(rows[0]) == [
        "index", "id", "url", "title", "selected", "reason", "pool", "consensus_size", "tie_pool",
        *[f"{name}_{col}" for name in sc.EXTRACTORS for col in ("state", "shingles", "coverage", "support", "score")],
    ]  # fmt: skip
    for row, selection in zip(rows, selections, strict=True):
        assert row["id"] == f"a{selection.index}"
        assert row["selected"] == selection.selected
        assert row["reason"] == selection.reason.value
        assert row["pool"] == selection.pool.value
        for candidate in selection.candidates:
            assert row[f"{candidate.name}_state"] == candidate.state.value
            assert row[f"{candidate.name}_shingles"] == candidate.shingle_count
            assert row[f"{candidate.name}_score"] == round(float(candidate.score), 4)
    json.dumps(rows)  # a table artifact must be JSON


def test_score_rows_omit_id_columns_no_article_has() -> None:
    doc = {"articles": [{"newspaper4k": {"text": "only text here"}}]}
    rows = score_rows(doc, sc.select_articles(doc["articles"]), 10)
    assert "id" not in rows[0] and "url" not in rows[0] and "title" not in rows[0]


def test_scores_description_states_the_cap() -> None:
    assert "capped at max_table_rows=2" in scores_description("b.json", 2, 7, 2)
    assert "report_path" in scores_description("b.json", 2, 7, 2)
    assert "report_path" not in scores_description("b.json", 7, 7, 200)


def test_summary_markdown_has_counts_paths_hashes_and_versions() -> None:
    doc, selections = _selections(3)
    summary = sc.summarize(selections)
    text = summary_markdown(
        summary=summary,
        input_path=Path("/data/b_extracted.json"),
        input_sha256="a" * 64,
        output_path=Path("/data/b_extracted_selected.json"),
        output_sha256="b" * 64,
        report_path=None,
        versions=component_versions(),
        shown_rows=3,
        max_rows=200,
    )
    assert "| Articles | 3 |" in text
    assert f"| Input SHA-256 | `{'a' * 64}` |" in text
    assert f"| Output SHA-256 | `{'b' * 64}` |" in text
    assert "`/data/b_extracted_selected.json`" in text
    for name, count in summary.by_extractor.items():
        assert f"| {name} | {count} |" in text
    for reason, count in summary.by_reason.items():
        assert f"| `{reason}` | {count} |" in text
    for component in ("selection_core", "ftfy", "regex"):
        assert f"| {component} | " in text
    assert f"| selection_core | {sc.__version__} |" in text


# --- scheduled directory scan -------------------------------------------------------


def _touch(path: Path, mtime_ns: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_stale_batches_are_missing_or_older_outputs(tmp_path: Path) -> None:
    t = 1_700_000_000 * 10**9
    fresh = _touch(tmp_path / "fresh_extracted.json", t)
    _touch(tmp_path / "fresh_extracted_selected.json", t + 1)
    same_age = _touch(tmp_path / "same_extracted.json", t)
    _touch(tmp_path / "same_extracted_selected.json", t)
    older = _touch(tmp_path / "sub" / "older_extracted.json", t + 5)
    _touch(tmp_path / "sub" / "older_extracted_selected.json", t)
    missing = _touch(tmp_path / "sub" / "deeper" / "new_extracted.json", t)
    _touch(tmp_path / "notes.json", t)
    _touch(tmp_path / ".hidden" / "h_extracted.json", t)

    assert find_batches(tmp_path) == sorted([fresh, same_age, older, missing])
    assert [is_stale(p) for p in (fresh, same_age, older, missing)] == [False, False, True, True]
    assert find_stale_batches.fn(tmp_path) == sorted([older, missing])


def test_directory_scan_does_not_follow_symlinked_directories(tmp_path: Path) -> None:
    inside = tmp_path / "root"
    outside = tmp_path / "outside"
    _touch(outside / "x_extracted.json", 10**18)
    inside.mkdir()
    (inside / "link").symlink_to(outside, target_is_directory=True)
    assert find_batches(inside) == []


def test_directory_scan_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidBatchError, match="not an existing directory"):
        find_batches(tmp_path / "missing")


# --- the trigger contract -------------------------------------------------------------


def test_event_resource_names_the_batch_path_as_sent(tmp_path: Path) -> None:
    sent = str(tmp_path / "root" / ".." / "b_extracted.json")
    resource = batch_extracted_resource(sent)
    assert resource == {
        "prefect.resource.id": f"content-selection.batch.{sent}",
        "prefect.resource.name": "b_extracted.json",
        BATCH_PATH_LABEL: sent,
    }


def test_emit_batch_extracted_sends_the_contract_event(mocker, tmp_path: Path, monkeypatch) -> None:
    emit = mocker.patch("content_selection.events.emit_event", return_value=None)
    monkeypatch.chdir(tmp_path)
    emit_batch_extracted("b_extracted.json", articles=3)
    absolute = str(tmp_path / "b_extracted.json")
    emit.assert_called_once_with(
        event=BATCH_EXTRACTED_EVENT,
        resource={
            "prefect.resource.id": f"content-selection.batch.{absolute}",
            "prefect.resource.name": "b_extracted.json",
            BATCH_PATH_LABEL: absolute,
        },
        payload={"articles": 3, "path": absolute},
    )


def test_trigger_matches_the_event_and_templates_the_path() -> None:
    trigger = batch_extracted_trigger()
    assert trigger.expect == {BATCH_EXTRACTED_EVENT}
    assert trigger.match.model_dump() == {"prefect.resource.id": "content-selection.batch.*"}
    assert trigger.parameters == {"input_path": INPUT_PATH_TEMPLATE}
    assert trigger.posture == "Reactive" and trigger.threshold == 1
    # The automation the trigger becomes is valid for the server.
    from uuid import uuid4

    trigger.set_deployment_id(uuid4())
    automation = trigger.as_automation()
    assert automation.actions[0].parameters == {"input_path": INPUT_PATH_TEMPLATE}
