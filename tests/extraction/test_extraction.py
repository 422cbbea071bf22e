"""The extract step with the real libraries on the real sample pages (tests/data/pages).

One extraction of the sample folder is shared by the module; the determinism
tests extract again, with other worker counts and from a manifest.
"""

from __future__ import annotations

import errno
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import selection_core as sc
from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_core.errors import WriteError
from selection_extraction import (
    ExtractionSettings,
    extract_pages,
    extract_to_file,
    extracted_path,
    find_pages,
)
from tests.support import PAGES, ROOT, benchmark_module

PAGE_FILES = sorted(p.name for p in PAGES.glob("*.html.gz"))
TRUTH: dict[str, dict[str, str]] = json.loads((PAGES / "ground-truth.json").read_text(encoding="utf-8"))
ERROR_FORMAT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.]*: \S.*\Z")

#: The selected text must score at least this (the benchmark's page F1) against
#: the human ground truth on every sample page; today it is 0.985 or more.
MIN_PAGE_F1 = 0.95

aeb_metric = benchmark_module("aeb_metric")


@pytest.fixture(scope="module")
def pages_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sample pages, so that default outputs land in a temporary folder."""
    target = tmp_path_factory.mktemp("sample") / "pages"
    shutil.copytree(PAGES, target)
    return target


@pytest.fixture(scope="module")
def extracted(pages_dir: Path) -> tuple[Path, bytes]:
    """``content-selection extract pages`` once, with the default output path."""
    run = extract_to_file(pages_dir)
    return run.output_path, run.output_path.read_bytes()


def doc_of(extracted: tuple[Path, bytes]) -> dict[str, Any]:
    return sc.parse_batch(extracted[1], str(extracted[0]))


def test_default_output_is_beside_the_folder(pages_dir: Path, extracted: tuple[Path, bytes]) -> None:
    assert extracted[0] == pages_dir.parent / "pages_extracted.json" == extracted_path(pages_dir)


def test_every_page_is_one_article_in_sorted_order(extracted: tuple[Path, bytes]) -> None:
    doc = doc_of(extracted)
    assert [a["path"] for a in doc["articles"]] == PAGE_FILES
    assert [a["id"] for a in doc["articles"]] == [name.removesuffix(".html.gz") for name in PAGE_FILES]
    assert all(a["url"] is None for a in doc["articles"])


def test_articles_have_the_three_blocks_the_selection_reads(extracted: tuple[Path, bytes]) -> None:
    for article in doc_of(extracted)["articles"]:
        assert list(article) == ["id", "url", "path", "encoding", "encoding_source", *EXTRACTORS]
        for name in EXTRACTORS:
            block = article[name]
            assert set(block) == {TEXT_FIELDS[name], "error"} | ({"title"} if name != "trafilatura" else set())
            assert isinstance(block[TEXT_FIELDS[name]], str)
            if block["error"] is None:
                assert block[TEXT_FIELDS[name]].strip(), f"{article['id']} {name}: no error and no text"
            else:
                assert ERROR_FORMAT.match(block["error"]) and block[TEXT_FIELDS[name]] == ""
        assert article["encoding"] == "utf-8"


def test_readability_text_keeps_paragraph_breaks(extracted: tuple[Path, bytes]) -> None:
    # cleaned_text is readability's article HTML made plain text by html_text: one
    # paragraph, one block of lines, never the whole article on one line.
    for article in doc_of(extracted)["articles"]:
        text = article["readability"]["cleaned_text"]
        assert "<p" not in text and "</" not in text
        if len(text) > 1000:
            assert "\n\n" in text, f"{article['id']}: no paragraph break"


def test_metadata_has_versions_and_settings_and_nothing_of_the_machine(
    pages_dir: Path, extracted: tuple[Path, bytes]
) -> None:
    doc = doc_of(extracted)
    assert list(doc) == ["extractor_versions", "extraction", "articles"]
    assert set(doc["extractor_versions"]) == set(EXTRACTORS)
    meta = doc["extraction"]
    assert meta["input"] == str(pages_dir) and meta["input_kind"] == "directory"
    assert meta["pages"] == len(PAGE_FILES) and meta["unreadable_pages"] == 0
    assert meta["extractors"]["newspaper4k"]["settings"]["fetch_images"] is False
    assert meta["extractors"]["newspaper4k"]["settings"]["memorize_articles"] is False
    assert meta["extractors"]["trafilatura"]["settings"] == {"include_comments": False}
    assert meta["extractors"]["readability"]["settings"]["html_partial"] is True
    text = extracted[1].decode()
    # The only absolute path is the input the user gave; no clock, no host.
    assert text.count(str(pages_dir.parent)) == 1
    assert not re.search(r"\b20\d\d-\d\d-\d\dT\d\d:", text)


def test_the_selection_reads_the_batch_and_picks_good_text(extracted: tuple[Path, bytes]) -> None:
    doc = doc_of(extracted)
    selections = sc.select_articles(doc["articles"])
    for article, selection in zip(doc["articles"], selections, strict=True):
        chosen = article[selection.selected][TEXT_FIELDS[selection.selected]]
        f1 = aeb_metric.page_counts(TRUTH[article["id"]]["articleBody"], chosen).f1
        assert f1 >= MIN_PAGE_F1, f"{article['id']}: selected {selection.selected} scores {f1:.3f}"


def test_rerun_with_other_worker_counts_is_byte_identical(
    pages_dir: Path, extracted: tuple[Path, bytes], tmp_path: Path
) -> None:
    one = extract_to_file(pages_dir, tmp_path / "one.json", ExtractionSettings(workers=1))
    two = extract_to_file(pages_dir, tmp_path / "two.json", ExtractionSettings(workers=2, recycle_after=1))
    assert one.output_path.read_bytes() == two.output_path.read_bytes() == extracted[1]


def test_manifest_gives_ids_urls_and_order(pages_dir: Path, extracted: tuple[Path, bytes], tmp_path: Path) -> None:
    manifest = pages_dir / "manifest.jsonl"
    entries = [json.loads(line) for line in manifest.read_text().splitlines()]
    reordered = tmp_path / "m.jsonl"
    # Reversed order, paths relative to the manifest's own folder.
    reordered.write_text(
        "".join(json.dumps({**e, "path": f"{pages_dir.name}/{e['path']}"}) + "\n" for e in reversed(entries))
    )
    shutil.copytree(pages_dir, tmp_path / pages_dir.name)
    result = extract_pages(find_pages(reordered))
    articles = result.doc["articles"]
    assert [a["id"] for a in articles] == [e["id"] for e in reversed(entries)]
    assert [a["url"] for a in articles] == [e["url"] for e in reversed(entries)]
    assert result.doc["extraction"]["input_kind"] == "manifest"
    # Same page, same texts, whichever way it was listed (the URL given to newspaper4k changes nothing here).
    by_path = {a["path"]: a for a in doc_of(extracted)["articles"]}
    for article in articles:
        original = by_path[article["path"].split("/", 1)[1]]
        for name in EXTRACTORS:
            assert article[name][TEXT_FIELDS[name]] == original[name][TEXT_FIELDS[name]]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(PAGES / "manifest.jsonl", id="manifest"),
        pytest.param(ROOT / "tests" / "data" / "warc" / "pages.warc.gz", id="warc"),
    ],
)
def test_the_written_batch_is_the_document_of_extract_pages_without_holding_it(source: Path, tmp_path: Path) -> None:
    run = extract_to_file(source, tmp_path / "out.json", ExtractionSettings(workers=2))
    reference = sc.dump_batch(extract_pages(find_pages(source), ExtractionSettings(workers=1)).doc)
    data = run.output_path.read_bytes()
    assert data == reference
    assert run.sha256 == hashlib.sha256(data).hexdigest() and run.size_bytes == len(data)
    assert "articles" not in run.result.doc and run.result.doc["extraction"]["pages"] == run.result.stats.pages
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_no_room_for_the_spooled_articles_is_a_write_error(tmp_path: Path, mocker: Any) -> None:
    mocker.patch("tempfile.TemporaryFile", side_effect=OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(WriteError, match="no space left on the device"):
        extract_to_file(PAGES / "manifest.jsonl", tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []
