"""benchmarks/quality_wcxb.py as a user runs it, on two real WCXB pages in the benchmark's own layout.

The two pages (tests/data/wcxb-pages, CC-BY-4.0) are the article where the extractors agree and the product page
that docs/rule.md walks through; the test holds the docs to what the rule does on them today.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from selection_core.config import TEXT_FIELDS
from tests.support import ROOT, benchmark_module

SCRIPT = ROOT / "benchmarks" / "quality_wcxb.py"
PAGES = ROOT / "tests" / "data" / "wcxb-pages"

metric = benchmark_module("wcxb_metric")


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=600, cwd=ROOT
    )


def test_the_one_command_scores_each_extractor_the_selection_and_the_filter(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _run("--dataset", PAGES, "--out", out, "--workers", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "wcxb-dev.json").read_text())
    assert report["pages"] == 2
    assert {t: n for t, n in report["page_types"].items() if n} == {"article": 1, "product": 1}

    # Each figure recomputed here from the batch and the ground truth with the benchmark's metric.
    batch = json.loads((out / "wcxb-dev_extracted.json").read_text())
    texts = {
        a["id"]: {name: (a[name] or {}).get(field) or "" for name, field in TEXT_FIELDS.items()}
        for a in batch["articles"]
    }
    for page_id, page in report["per_page"].items():
        truth = json.loads((PAGES / "dev" / "ground-truth" / f"{page_id}.json").read_text())
        reference = truth["ground_truth"]["main_content"]
        f1 = {n: metric.word_scores(t, reference).f1 for n, t in texts[page_id].items()}
        assert page["f1"]["selection"] == pytest.approx(f1[page["selected_extractor"]])
        assert page["f1"]["best"] == pytest.approx(max(f1.values()))
        for name, value in f1.items():
            assert page["f1"][name] == pytest.approx(value)

    # The article: the extractors agree, a tie, kept by the README's filter.
    article = report["per_page"]["0014"]
    assert article["reason"].startswith("consensus_tie") and article["score"] >= 0.9 and article["kept"]
    # The product page of docs/rule.md: newspaper4k's short part wins on support, far below trafilatura alone.
    product = report["per_page"]["4225"]
    assert (product["selected_extractor"], product["reason"]) == ("newspaper4k", "consensus_top_score")
    assert product["f1"]["trafilatura"] > product["f1"]["selection"] + 0.5
    assert not product["kept"]
    assert report["keep"]["share"] == 0.5
    assert "| **consensus selection** |" in (out / "wcxb-dev.md").read_text()

    # Scoring the saved batch again gives the same report and the same dataset, byte for byte.
    again = tmp_path / "again"
    done = _run("--dataset", PAGES, "--out", again, "--batch", out / "wcxb-dev_extracted.json")
    assert done.returncode == 0, done.stderr
    assert (again / "wcxb-dev.json").read_bytes() == (out / "wcxb-dev.json").read_bytes()
    assert (again / "wcxb-dev_selected.parquet").read_bytes() == (out / "wcxb-dev_selected.parquet").read_bytes()


def test_a_folder_that_is_not_the_benchmark_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _run("--dataset", tmp_path, "--out", out)
    assert done.returncode == 65
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(tmp_path / "dev") in lines[0] and "--dataset" in lines[0]
    assert not out.exists()


def test_the_readme_quotes_the_filter_the_benchmark_measures() -> None:
    module = benchmark_module("quality_wcxb")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f'"WHERE {module.KEEP_WHERE}"' in readme


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param({"_internal": {"page_type": {"primary": "forum"}}}, "forum", id="primary"),
        pytest.param({"_internal": {"page_type": {"primary": "category"}}}, "collection", id="category-is-collection"),
        pytest.param({"_internal": {"page_type": "listing"}}, "listing", id="a-plain-string"),
        pytest.param({"_internal": None}, "article", id="no-type-is-an-article"),
        pytest.param({}, "article", id="no-internal-block"),
    ],
)
def test_page_types_are_read_as_the_benchmarks_evaluate_py_reads_them(raw: dict, expected: str) -> None:
    assert benchmark_module("quality_wcxb").page_type(raw) == expected
