"""Finding the pages of an input (selection_extraction.pages): folders, manifests, and inputs refused as a whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from selection_extraction import InvalidPagesError, find_pages
from selection_extraction.paths import resolve_extract_paths


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        pytest.param(['{"path": "a.html"}', "not json"], "line 2 is not JSON", id="not-json"),
        pytest.param(['["a.html"]'], "line 1 is not a JSON object", id="not-an-object"),
        pytest.param(['{"id": "a"}'], 'line 1 has no "path" string', id="no-path"),
        pytest.param(['{"path": ""}'], 'line 1 has no "path" string', id="empty-path"),
        pytest.param(['{"path": "a.html", "url": 7}'], '"url" must be a string or null', id="url-not-a-string"),
        pytest.param(['{"path": "a.html", "id": ["x"]}'], '"id" must be a string or null', id="id-not-a-string"),
    ],
)
def test_malformed_manifests_are_refused_with_the_line(tmp_path: Path, lines: list[str], message: str) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidPagesError, match=message) as info:
        find_pages(manifest)
    assert str(manifest) in str(info.value) and "\n" not in str(info.value)
    assert info.value.exit_code == 65


def test_manifest_not_utf_8_is_refused(tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_bytes(b'{"path": "a.html"}\n{"path": "caf\xe9.html"}\n')
    with pytest.raises(InvalidPagesError, match="line 2 is not UTF-8"):
        find_pages(manifest)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda p: p, "no such file or directory", id="missing"),
        pytest.param(lambda p: (p.mkdir(), (p / "notes.txt").write_text("x"), p)[-1], "no .html", id="no-page"),
    ],
)
def test_unusable_inputs_are_refused(tmp_path: Path, make: Any, message: str) -> None:
    with pytest.raises(InvalidPagesError, match=message):
        find_pages(make(tmp_path / "pages"))


def test_hidden_entries_are_skipped_and_subfolders_searched(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    (folder / "sub").mkdir(parents=True)
    (folder / ".cache").mkdir()
    for rel in ("b.HTML", "sub/a.htm", ".hidden.html", ".cache/c.html", "notes.txt"):
        (folder / rel).write_text("<p>x</p>")
    page_set = find_pages(folder)
    assert [(p.id, p.path) for p in page_set.entries] == [("b", "b.HTML"), ("sub/a", "sub/a.htm")]


def test_an_object_named_as_a_page_is_a_page_and_read_through_its_store() -> None:
    import fsspec

    from selection_extraction.pages import read_page

    fs = fsspec.filesystem("memory")
    fs.pipe_file("/crawls/page.html", b"<html><body>not an archive</body></html>")
    page_set = find_pages("memory://crawls/page.html")
    assert page_set.kind == "page" and [(p.id, p.path) for p in page_set.entries] == [("page", "page.html")]
    assert read_page(page_set.entries[0]) == b"<html><body>not an archive</body></html>"
    paths = resolve_extract_paths("memory://crawls/day/x.warc.gz")  # not there yet: nothing read
    assert str(paths.pages) == "memory://crawls/day/x.warc.gz"
    assert str(paths.output) == "memory://crawls/day/x_extracted.json"
