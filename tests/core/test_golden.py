"""Golden test on real extractor output (181 ScrapingHub benchmark pages).

The expected decisions are pinned in ``tests/data/aeb_expected_selections.json``;
``python scripts/regen_golden.py`` regenerates them (commit the result with the
change that caused it, and say why in the commit message).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import orjson
import pytest

import selection_core as sc
from selection_cli.main import main
from tests.support import DATA
from tests.support.reference_rule import assert_agrees_with_reference

BATCH = DATA / "aeb_batch_extracted.json"
EXPECTED = json.loads((DATA / "aeb_expected_selections.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def selected() -> tuple[bytes, list[sc.Selection]]:
    return sc.select_batch_bytes(BATCH.read_bytes(), BATCH.name)


def test_golden_batch_is_the_real_181_pages() -> None:
    doc = orjson.loads(BATCH.read_bytes())
    assert len(doc["articles"]) == 181
    assert len({a["id"] for a in doc["articles"]}) == 181


@pytest.mark.parametrize("i", range(len(EXPECTED["articles"])), ids=lambda i: f"article-{i:03d}")
def test_golden_decision(selected: tuple[bytes, list[sc.Selection]], i: int) -> None:
    _, selections = selected
    want = dict(EXPECTED["articles"][i])
    want.pop("id")
    assert selections[i].to_dict() == want


def test_golden_output_bytes(selected: tuple[bytes, list[sc.Selection]]) -> None:
    out, selections = selected
    assert hashlib.sha256(out).hexdigest() == EXPECTED["output_sha256"]
    assert sc.summarize(selections).to_dict() == EXPECTED["summary"]


def test_golden_through_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inp = tmp_path / "aeb_extracted.json"
    inp.write_bytes(BATCH.read_bytes())
    assert main(["select", str(inp)]) == 0
    out = tmp_path / "aeb_extracted_selected.json"
    assert hashlib.sha256(out.read_bytes()).hexdigest() == EXPECTED["output_sha256"]
    assert inp.read_bytes() == BATCH.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aeb_extracted.json", "aeb_extracted_selected.json"]
    printed = capsys.readouterr().out
    assert f"articles: {EXPECTED['summary']['articles']}" in printed


@pytest.mark.parametrize("i", range(len(EXPECTED["articles"])), ids=lambda i: f"article-{i:03d}")
def test_golden_article_agrees_with_the_plain_reference(i: int) -> None:
    """The pinned data is not just what the core said once: a straightforward
    implementation of the rule (no fast paths) reaches the same decision."""
    assert_agrees_with_reference(_articles()[i])


@functools.cache
def _articles() -> list[dict]:
    return orjson.loads(BATCH.read_bytes())["articles"]
