"""The Prefect tasks through ``.fn()`` (no Prefect API): each one call into the layers below, checked against them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import selection_core as sc
from selection_core.errors import InvalidBatchError
from selection_core.evidence import report_entry
from selection_storage.directory import find_stale_batches as storage_scan
from selection_storage.files import sha256_file
from tasks.artifacts import component_versions
from tasks.batch import persist_batch, write_selection_report
from tasks.chunks import plan_batch
from tasks.discover import find_stale_batches
from tasks.select import select_extractors
from tests.support.prefect_fixtures import expected_output, make_batch

pytestmark = pytest.mark.usefixtures("no_data_root_env")


# --- extract, select, persist -------------------------------------------------------


def test_plan_reads_validates_the_envelope_and_fingerprints(batch_factory) -> None:
    path = batch_factory(n_articles=4)
    plan = plan_batch.fn(path)
    assert plan.article_count == 4 and plan.doc is None
    assert plan.envelope == {**make_batch(4), "articles": []}
    assert plan.size_bytes == path.stat().st_size
    assert plan.sha256 == sha256_file(path)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"[]", id="root-not-object"),
        pytest.param(b'{"articles": {}}', id="articles-not-list"),
    ],
)
def test_plan_refuses_invalid_batches(batch_factory, raw: bytes) -> None:
    with pytest.raises(InvalidBatchError):
        plan_batch.fn(batch_factory(raw=raw))


def test_select_persist_and_report_match_the_core(batch_factory, tmp_path: Path) -> None:
    path = batch_factory(n_articles=5)
    doc = sc.parse_batch(path.read_bytes())
    selections = select_extractors.fn(doc, batch_name=path.name)
    assert [s.index for s in selections] == list(range(5))
    output = tmp_path / "out.json"
    written = persist_batch.fn(doc, selections, output)
    assert output.read_bytes() == expected_output(path)
    assert written.sha256 == sha256_file(output)
    assert written.size_bytes == output.stat().st_size
    # Applying the same selections again (a retry) writes the same bytes.
    persist_batch.fn(doc, selections, output)
    assert output.read_bytes() == expected_output(path)

    report = write_selection_report.fn(doc, selections, tmp_path / "report.jsonl")
    lines = report.read_bytes().splitlines()
    articles = doc["articles"]
    assert [orjson.loads(line) for line in lines] == [report_entry(a, s) for a, s in zip(articles, selections)]
    assert [orjson.loads(line)["id"] for line in lines] == [a["id"] for a in articles]


# --- artifacts and the directory scan, through the tasks ------------------------------


def test_component_versions_name_the_core_and_the_libraries() -> None:
    versions = component_versions()
    assert list(versions) == ["selection_core", "ftfy", "regex", "prefect"]
    assert versions["selection_core"] == sc.__version__
    assert all(isinstance(v, str) and v for v in versions.values())


def test_find_stale_batches_task_is_the_storage_scan(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a_extracted.json", "sub/b_extracted.json", "sub/b_extracted_selected.json"):
        (tmp_path / name).write_text("{}")
    assert find_stale_batches.fn(tmp_path) == storage_scan(tmp_path) != []
