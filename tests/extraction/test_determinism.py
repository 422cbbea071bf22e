"""The same pages give the same texts and the same batch: every real page, shuffled orders, fresh processes.

newspaper4k decided some ties by memory address (newspaper4k #738, see
``selection_extraction.adapters``); a comparison of two runs over a handful of pages
does not see that. These tests run every real page (the 187 of ``tests/data``):

* each extractor, in two fresh processes (different ``PYTHONHASHSEED``), every page
  in another shuffled order, with other objects allocated between calls: one result
  (text, title, exception type) per page and extractor;
* the whole extract step: the same articles (keyed by id) from a shuffled manifest on 2
  fresh workers, and byte-identical batches with 1 worker and with 2 kept workers.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from selection_core.batch import dump_batch
from selection_extraction import ExtractionSettings, extract_pages, find_pages
from selection_extraction.pool import stop_kept_workers
from tests.support import AEB_PAGES, ROOT
from tests.support.extract_repeatedly import DEFAULT_FUNCTIONS

pytestmark = pytest.mark.slow


def test_each_extractor_gives_one_result_per_real_page_in_fresh_processes_and_shuffled_orders() -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.extract_repeatedly", "--seed", str(seed), "--repeats", "1"],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed, hash_seed in ((1, 0), (2, 4242))
    ]
    runs = []
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err[-2000:]
        runs.append(json.loads(out))
    assert runs[0].keys() == runs[1].keys() and len(runs[0]) == 187
    unstable = {
        (page, name): len({digest for run in runs for digest in run[page][name]})
        for page in runs[0]
        for name in DEFAULT_FUNCTIONS
    }
    assert all(len(run[page][name]) == 1 for run in runs for page in run for name in DEFAULT_FUNCTIONS)
    assert {key: n for key, n in unstable.items() if n != 1} == {}


def _shuffled_manifest(folder: Path) -> Path:
    lines = (AEB_PAGES / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    random.Random(20241201).shuffle(lines)
    entries = [json.loads(line) for line in lines]
    for entry in entries:
        entry["path"] = str(AEB_PAGES / entry["path"])
    manifest = folder / "shuffled.jsonl"
    manifest.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return manifest


def _by_id(doc: dict[str, Any]) -> dict[str, bytes]:
    """Each article's bytes without its ``path`` (the shuffled manifest names the pages by absolute path)."""
    return {a["id"]: json.dumps({k: v for k, v in a.items() if k != "path"}).encode() for a in doc["articles"]}


def test_the_extract_step_gives_one_batch_whatever_its_workers_and_the_manifest_order(tmp_path: Path) -> None:
    pages = find_pages(AEB_PAGES / "manifest.jsonl")
    one = extract_pages(pages, ExtractionSettings(workers=1)).doc
    kept = ExtractionSettings(workers=2, keep_workers=True)
    try:
        shuffled = extract_pages(find_pages(_shuffled_manifest(tmp_path)), kept).doc  # 2 fresh workers
        again = extract_pages(pages, kept)  # the 2 workers that ran the shuffled pages
        kept_workers = stop_kept_workers()
    finally:
        stop_kept_workers()
    assert kept_workers == 2  # only those: the second run took them
    assert dump_batch(again.doc) == dump_batch(one)
    assert [a["id"] for a in shuffled["articles"]] != [a["id"] for a in one["articles"]]
    assert _by_id(shuffled) == _by_id(one)
    assert len(one["articles"]) == 181 and one["extraction"]["errors"]["newspaper4k"] == 4
