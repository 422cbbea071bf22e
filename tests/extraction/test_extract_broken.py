"""Broken pages and bad inputs: every page is still one article, a bad input is one clear error.

The broken pages are made here: an empty file, binary junk, a 20 MB page, wrong
charset declarations, damaged gzip files, a dangling link. They go through the
real extractors, in one batch with a real page.
"""

from __future__ import annotations

import gzip
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

import selection_core as sc
from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_extraction import (
    ExtractionSettings,
    extract_pages,
    extract_to_file,
    find_pages,
)
from tests.support import PAGES
from tests.support.real_pages import CAFE_ARTICLE

REAL_PAGE = PAGES / "06ee193de4bd611f7fafbab0c59b0f6fe3495093516720632cd093b24c7a0e98.html.gz"
TWENTY_MB = 20 * 1024 * 1024


def real_html() -> bytes:
    return gzip.decompress(REAL_PAGE.read_bytes())


def broken_pages(folder: Path) -> dict[str, str]:
    """Write the broken pages; returns {file name: what it is}."""
    folder.mkdir()
    rng = random.Random(20240501)
    html = real_html()
    big = html.replace(
        b"</body>", b'<script>window.__STATE__ = "' + b"x" * (TWENTY_MB - len(html)) + b'";</script></body>'
    )
    assert len(big) > TWENTY_MB
    files = {
        "a_empty.html": (b"", "empty file"),
        "b_junk.html": (bytes(rng.randrange(256) for _ in range(50_000)), "binary junk"),
        "c_big.html": (big, "a 20 MB page"),
        "d_utf8_declared_latin1.html": (
            CAFE_ARTICLE.format(meta='<meta charset="iso-8859-1">').encode("utf-8"),
            "UTF-8 bytes declared iso-8859-1",
        ),
        "e_cp1252_declared_utf8.htm": (
            CAFE_ARTICLE.format(meta='<meta charset="utf-8">').encode("cp1252"),
            "windows-1252 bytes declared UTF-8",
        ),
        "f_unknown_charset.html": (
            CAFE_ARTICLE.format(meta='<meta charset="x-klingon">').encode("utf-8"),
            "an unknown charset label",
        ),
        "g_not_gzip.html.gz": (b"<html>not compressed at all</html>", "a .gz that is not gzip"),
        "h_truncated.html.gz": (gzip.compress(html)[:2000], "a truncated gzip file"),
        "i_real.html.gz": (REAL_PAGE.read_bytes(), "a real page"),
    }
    for name, (data, _) in files.items():
        (folder / name).write_bytes(data)
    (folder / "j_dangling.html").symlink_to(folder / "no-such-target.html")
    return {**{name: what for name, (_, what) in files.items()}, "j_dangling.html": "a dangling link"}


@pytest.fixture(scope="module")
def broken_batch(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, Any]]:
    folder = tmp_path_factory.mktemp("broken") / "pages"
    pages = broken_pages(folder)
    run = extract_to_file(folder, folder.parent / "broken_extracted.json")
    doc = sc.parse_batch(run.output_path.read_bytes(), str(run.output_path))
    return pages, doc


def article(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in doc["articles"] if a["path"] == name)


def test_every_broken_page_is_one_article_in_order(broken_batch: tuple[dict[str, str], dict[str, Any]]) -> None:
    pages, doc = broken_batch
    assert [a["path"] for a in doc["articles"]] == sorted(pages)
    assert doc["extraction"]["pages"] == len(pages)
    # The selection accepts the batch and decides every article.
    assert len(sc.select_articles(doc["articles"])) == len(pages)


@pytest.mark.parametrize(
    ("name", "error_type"),
    [
        pytest.param("g_not_gzip.html.gz", "BadGzipFile", id="not-gzip"),
        pytest.param("h_truncated.html.gz", "EOFError", id="truncated-gzip"),
        pytest.param("j_dangling.html", "FileNotFoundError", id="dangling-link"),
    ],
)
def test_unreadable_pages_get_three_error_blocks(
    broken_batch: tuple[dict[str, str], dict[str, Any]], name: str, error_type: str
) -> None:
    entry = article(broken_batch[1], name)
    assert entry["encoding"] is None
    for extractor in EXTRACTORS:
        block = entry[extractor]
        assert block[TEXT_FIELDS[extractor]] == ""
        assert block["error"].startswith(f"{error_type}: cannot read page {name}")
    assert broken_batch[1]["extraction"]["unreadable_pages"] == 3


@pytest.mark.parametrize("name", ["a_empty.html", "b_junk.html"])
def test_pages_without_an_article_give_no_text_but_stay(
    broken_batch: tuple[dict[str, str], dict[str, Any]], name: str
) -> None:
    entry = article(broken_batch[1], name)
    assert entry["trafilatura"]["text"] == "" and entry["newspaper4k"]["text"] == ""
    for extractor in EXTRACTORS:
        assert entry[extractor]["error"] is None or entry[extractor][TEXT_FIELDS[extractor]] == ""


def test_the_20_mb_page_is_extracted(broken_batch: tuple[dict[str, str], dict[str, Any]]) -> None:
    big = article(broken_batch[1], "c_big.html")
    real = article(broken_batch[1], "i_real.html.gz")
    for extractor in EXTRACTORS:
        assert big[extractor]["error"] is None
        assert big[extractor][TEXT_FIELDS[extractor]] == real[extractor][TEXT_FIELDS[extractor]]


@pytest.mark.parametrize(
    ("name", "encoding", "source", "must_contain"),
    [
        pytest.param(
            "d_utf8_declared_latin1.html", "utf-8", "valid-utf-8", "crème brûlée", id="utf-8-declared-latin-1"
        ),
        pytest.param(
            "e_cp1252_declared_utf8.htm",
            "utf-8",
            "utf-8-with-replacement",
            "cr\ufffdme br\ufffdl\ufffde",
            id="windows-1252-declared-utf-8",
        ),
        pytest.param("f_unknown_charset.html", "utf-8", "valid-utf-8", "crème brûlée", id="unknown-label"),
    ],
)
def test_wrong_charset_declarations(
    broken_batch: tuple[dict[str, str], dict[str, Any]], name: str, encoding: str, source: str, must_contain: str
) -> None:
    entry = article(broken_batch[1], name)
    assert (entry["encoding"], entry["encoding_source"]) == (encoding, source)
    texts = [entry[e][TEXT_FIELDS[e]] for e in EXTRACTORS if entry[e]["error"] is None]
    assert texts and all(must_contain in text for text in texts)
    assert not any("Ã" in text for text in texts)  # no mojibake


def test_a_page_over_the_size_limit_is_refused_alone(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    shutil.copy(REAL_PAGE, folder / "small.html.gz")
    (folder / "large.html").write_bytes(real_html() * 4)
    result = extract_pages(find_pages(folder), ExtractionSettings(max_page_bytes=len(real_html()) + 1))
    large, small = result.doc["articles"]
    assert large["newspaper4k"]["error"].startswith("PageTooLargeError: cannot read page large.html: larger than")
    assert small["newspaper4k"]["error"] is None and small["newspaper4k"]["text"]


# --- inputs that are refused as a whole -------------------------------------------------------------


def test_manifest_entries_default_their_id_and_missing_files_become_error_articles(tmp_path: Path) -> None:
    shutil.copy(REAL_PAGE, tmp_path / "real.html.gz")
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"path": "real.html.gz", "url": null}\n\n{"path": "gone.html", "id": "g"}\n')
    result = extract_pages(find_pages(manifest))
    real, gone = result.doc["articles"]
    assert (real["id"], real["path"]) == ("real", "real.html.gz")
    assert real["trafilatura"]["error"] is None and real["trafilatura"]["text"]
    assert gone["id"] == "g"
    assert all(gone[e]["error"].startswith("FileNotFoundError: cannot read page gone.html") for e in EXTRACTORS)


def test_an_empty_manifest_is_an_empty_batch(tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("\n")
    run = extract_to_file(manifest)
    assert run.output_path == tmp_path / "m_extracted.json"
    assert sc.parse_batch(run.output_path.read_bytes())["articles"] == []


def test_nothing_is_written_when_the_output_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    shutil.copy(REAL_PAGE, folder / "p.html.gz")
    with pytest.raises(sc.OutputPathError):
        extract_to_file(folder, tmp_path / "missing-dir" / "out.json")
    with pytest.raises(sc.OutputPathError):
        extract_to_file(folder, folder)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["p.html.gz", "pages"]


# --- transient read errors ----------------------------------------------------------------------


def test_a_transient_read_error_is_retried(tmp_path: Path, mocker: Any) -> None:
    import errno

    import selection_extraction.pages

    shutil.copy(REAL_PAGE, tmp_path / "p.html.gz")
    real_read = selection_extraction.pages.read_page
    calls: list[str] = []

    def flaky(page: Any, max_bytes: int) -> bytes:
        calls.append(page.path)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        return real_read(page, max_bytes)

    mocker.patch("selection_extraction.pages.read_page", side_effect=flaky)
    result = extract_pages(find_pages(tmp_path / "p.html.gz"))
    assert calls == ["p.html.gz", "p.html.gz"]
    assert result.doc["articles"][0]["trafilatura"]["error"] is None
    assert result.stats.unreadable_pages == 0


def test_a_lasting_read_error_gives_error_blocks(tmp_path: Path, mocker: Any) -> None:
    import errno

    shutil.copy(REAL_PAGE, tmp_path / "p.html.gz")
    read = mocker.patch("selection_extraction.pages.read_page", side_effect=OSError(errno.EIO, "Input/output error"))
    result = extract_pages(find_pages(tmp_path / "p.html.gz"))
    assert read.call_count >= 2  # tried again while the patience lasted (READ_PATIENCE_SECONDS)
    article = result.doc["articles"][0]
    assert article["path"] == "p.html.gz"
    assert all(article[e]["error"] == "OSError: cannot read page p.html.gz: Input/output error" for e in EXTRACTORS)
