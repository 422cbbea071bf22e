"""Pages in an object store (selection_extraction.pages, .inbox), on each store's real protocol on loopback through its
real client (S3, Google Cloud Storage, Azure: ``tests/support/object_stores.py``): a prefix is listed as the same
folder on a disk is, a manifest object as a manifest file is, a page object is read through its store; every bad
entry is one line naming the manifest's line.
"""

from __future__ import annotations

import errno
import gzip
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from selection_core.errors import ReadError
from selection_extraction import InvalidPagesError, find_pages
from selection_extraction.inbox import ignored_advice, scan_inbox
from selection_extraction.pages import PageReadings, page_bytes, read_error, read_page
from selection_storage.stores import ObjectPath
from tests.support import DATA, PAGES
from tests.support.object_stores import tree

Put = Callable[[str, bytes], None]

ONE_PAGE = PAGES / "06ee193de4bd611f7fafbab0c59b0f6fe3495093516720632cd093b24c7a0e98.html.gz"
ANOTHER_PAGE = PAGES / "d90bda7ed14df19574f4ca8b1ccde5752a78f40058af1393e81cc99adb3e8756.html.gz"
WARC = DATA / "warc" / "pages.warc.gz"


@pytest.fixture
def put(store_server) -> Put:
    return store_server.put


@pytest.fixture
def root(store_server, bucket: str) -> str:
    return store_server.url(bucket).rstrip("/")


def listed(page_set) -> list[tuple]:
    """What a page set says of each page (a web archive's pages as it is read) but where its file is."""
    return [(p.id, p.url, p.path, p.encoding, p.warc) for p, _ in PageReadings(page_set, read_files=False)]


def records(page_set) -> dict[str, int] | None:
    """The records of a page set's web archives by kind, as reading them counts them."""
    readings = PageReadings(page_set, read_files=False)
    list(readings)
    return readings.warc_records


#: A folder with pages at two levels, hidden names, a note, web archives named and not, and an ARC-like file.
FOLDER = {
    "b.HTML": b"<html><body><p>b</p></body></html>",
    "sub/a.html.gz": ONE_PAGE.read_bytes(),
    "sub/deeper/c.htm": b"<p>c</p>",
    ".hidden.html": b"<p>hidden</p>",
    ".cache/d.html": b"<p>hidden folder</p>",
    "sub/.git/e.html": b"<p>hidden deeper</p>",
    "notes.txt": b"not a page",
    "crawls/day.warc.gz": WARC.read_bytes(),
    "crawls/loose.bin": WARC.read_bytes(),
}


def test_a_prefix_is_listed_as_the_same_folder_on_a_disk(put: Put, root: str, tmp_path: Path) -> None:
    tree(put, f"{root}/site", tmp_path / "site", FOLDER)
    put(f"{root}/site2/x.html", b"<p>a sibling prefix, not under site/</p>")
    put(f"{root}/site.html", b"<p>beside the prefix</p>")

    remote, local = find_pages(f"{root}/site"), find_pages(tmp_path / "site")

    assert remote.kind == local.kind == "directory" and remote.source == f"{root}/site"
    assert listed(remote) == listed(local)
    assert [p[2] for p in listed(remote)[:4]] == [
        "b.HTML",
        "crawls/day.warc.gz",
        "crawls/day.warc.gz",
        "crawls/day.warc.gz",
    ]
    assert {p[2] for p in listed(remote)} == {
        "b.HTML",
        "crawls/day.warc.gz",
        "crawls/loose.bin",
        "sub/a.html.gz",
        "sub/deeper/c.htm",
    }
    assert records(remote) == records(local) and records(remote)
    assert all(isinstance(p.file, ObjectPath) and str(p.file).startswith(f"{root}/site/") for p in remote.entries)
    assert find_pages(f"{root}/site/").entries == remote.entries  # a trailing slash is the same prefix


@pytest.mark.parametrize("what", ["missing", "empty-of-pages"])
def test_a_prefix_without_pages_is_refused_as_an_empty_folder_is(put: Put, root: str, what: str) -> None:
    if what == "empty-of-pages":
        put(f"{root}/site/notes.txt", b"not a page")
        put(f"{root}/site/.hidden.html", b"<p>hidden</p>")
    with pytest.raises(InvalidPagesError) as info:
        find_pages(f"{root}/site")
    assert str(info.value) == (
        f"{root}/site: no such object, and no object under this prefix; check the URL"
        if what == "missing"
        else f"{root}/site: no .html, .htm, .html.gz, .htm.gz page or .warc, .warc.gz file under this prefix; "
        "check the URL"
    )
    assert info.value.exit_code == 65
    if what == "missing":  # a mistyped object's URL is said so, whatever it is named
        with pytest.raises(InvalidPagesError, match=r"crawl\.warc\.gz: no such object, and no object under this"):
            find_pages(f"{root}/crawl.warc.gz")


def test_a_gzip_page_object_is_read_through_its_store(put: Put, root: str, tmp_path: Path) -> None:
    tree(put, f"{root}/site", tmp_path / "site", {"a.htm.gz": ANOTHER_PAGE.read_bytes()})

    page_set = find_pages(f"{root}/site/a.htm.gz")

    assert page_set.kind == "page" and listed(page_set) == [("a", None, "a.htm.gz", None, None)]
    data = read_page(page_set.entries[0])
    assert data == gzip.decompress(ANOTHER_PAGE.read_bytes()) == read_page(find_pages(tmp_path / "site").entries[0])
    assert page_set.entries[0].weight == len(ANOTHER_PAGE.read_bytes())  # its size, from the store


def test_a_manifest_object_lists_its_pages_as_a_manifest_file_does(put: Put, root: str, tmp_path: Path) -> None:
    files = {
        "pages/a.html.gz": ONE_PAGE.read_bytes(),
        "pages/b.html": b"<p>b</p>",
        "crawl.warc.gz": WARC.read_bytes(),
        "loose.bin": WARC.read_bytes(),
    }
    manifest = (
        b'{"id": "first", "url": "https://example.org/a", "path": "pages/a.html.gz"}\n'
        b"\n"
        b'{"path": "pages/b.html", "encoding": "latin-1"}\n'
        b'{"path": "crawl.warc.gz"}\n'
        b'{"path": "loose.bin"}\n'
    )
    tree(put, f"{root}/in", tmp_path / "in", {**files, "list.jsonl": manifest})
    put(f"{root}/elsewhere/c.html", b"<p>c</p>")

    remote, local = find_pages(f"{root}/in/list.jsonl"), find_pages(tmp_path / "in" / "list.jsonl")

    assert remote.kind == local.kind == "manifest" and listed(remote) == listed(local)
    assert records(remote) == records(local) and records(remote)
    assert [str(p.file) for p in remote.entries[:2]] == [f"{root}/in/pages/a.html.gz", f"{root}/in/pages/b.html"]
    assert read_page(remote.entries[1]) == b"<p>b</p>"

    # an entry may be an absolute URL of an object, anywhere the store reaches
    put(f"{root}/in/more.jsonl", f'{{"path": "{root}/elsewhere/c.html"}}\n'.encode())
    (page,) = find_pages(f"{root}/in/more.jsonl").entries
    assert (page.id, page.path, str(page.file)) == ("c", f"{root}/elsewhere/c.html", f"{root}/elsewhere/c.html")
    assert read_page(page) == b"<p>c</p>"


def test_a_missing_object_of_a_manifest_is_an_unreadable_page_as_a_missing_file_is(
    put: Put, root: str, tmp_path: Path
) -> None:
    manifest = b'{"path": "gone.html"}\n{"path": "gone"}\n'
    tree(put, f"{root}/in", tmp_path / "in", {"list.jsonl": manifest})

    remote, local = find_pages(f"{root}/in/list.jsonl"), find_pages(tmp_path / "in" / "list.jsonl")

    assert (
        listed(remote) == listed(local) == [("gone", None, "gone.html", None, None), ("gone", None, "gone", None, None)]
    )
    for remote_page, local_page in zip(remote.entries, local.entries, strict=True):
        on_store, on_disk = page_bytes(remote_page), page_bytes(local_page)
        assert isinstance(on_store, FileNotFoundError) and isinstance(on_disk, FileNotFoundError)
        assert read_error(remote_page, on_store) == read_error(local_page, on_disk)
        assert read_error(remote_page, on_store) == (
            f"FileNotFoundError: cannot read page {local_page.path}: No such file or directory"
        )


def test_a_store_that_fails_while_a_page_is_read_fails_the_read(store_server, put: Put, root: str, mocker) -> None:
    put(f"{root}/in/a.html", b"<p>a</p>")
    (page,) = find_pages(f"{root}/in").entries

    def dropped(self, start, end):
        raise OSError(errno.EIO, "connection reset by peer (injected)")

    mocker.patch.object(store_server.file_class, "_fetch_range", dropped)
    mocker.patch("selection_extraction.pages.READ_PATIENCE_SECONDS", 0.0)
    with pytest.raises(ReadError, match=f"{root}/in/a.html: the store failed .*retry later"):
        page_bytes(page)  # a SelectionError: the run fails, the page is not made an error article


def _refusal(put: Put, root: str, line: bytes) -> str:
    put(f"{root}/in/list.jsonl", b'{"path": "ok.html"}\n' + line + b"\n")
    with pytest.raises(InvalidPagesError) as info:
        find_pages(f"{root}/in/list.jsonl")
    assert info.value.exit_code == 65
    return str(info.value)


@pytest.mark.parametrize(
    ("line", "rest"),
    [
        pytest.param(
            b'{"path": "../x.html"}',
            ": \"path\" '../x.html' has '.' or '..' segments; give a path under the manifest's prefix, "
            "or an object's URL",
            id="parent",
        ),
        pytest.param(
            b'{"path": "pages/./x.html"}',
            ": \"path\" 'pages/./x.html' has '.' or '..' segments; give a path under the manifest's prefix, "
            "or an object's URL",
            id="dot",
        ),
        pytest.param(
            b'{"path": "/srv/pages/x.html"}',
            ": \"path\" '/srv/pages/x.html' is on a disk, which a manifest in a store cannot name; "
            "give a path relative to the manifest, or an object's URL",
            id="absolute-local",
        ),
        pytest.param(
            b'{"path": "file:///srv/x.html"}',
            ": \"path\" 'file:///srv/x.html' is on a disk, which a manifest in a store cannot name; "
            "give a path relative to the manifest, or an object's URL",
            id="file-url",
        ),
        pytest.param(
            b'{"path": "s3://other/a/../x.html"}',
            ": \"path\" page path 's3://other/a/../x.html' has '.' or '..' segments; give the object's own URL",
            id="url-with-dots",
        ),
        pytest.param(b"not json", " is not JSON (", id="not-json"),
        pytest.param(b'{"id": "x"}', ' has no "path" string; give the page file\'s path', id="no-path"),
        pytest.param(b'{"path": "a.html", "url": 7}', ': "url" must be a string or null', id="url-not-a-string"),
    ],
)
def test_a_bad_manifest_line_is_refused_in_one_line_naming_the_object_and_line(
    put: Put, root: str, line: bytes, rest: str
) -> None:
    message = _refusal(put, root, line)
    if line == b"not json":  # the parser's own words follow
        assert message.startswith(f"{root}/in/list.jsonl: line 2{rest}") and "\n" not in message
    else:
        assert message == f"{root}/in/list.jsonl: line 2{rest}"


def test_a_manifest_object_not_utf_8_is_refused_naming_the_line(put: Put, root: str) -> None:
    message = _refusal(put, root, b'{"path": "caf\xe9.html"}')
    assert message == f"{root}/in/list.jsonl: line 2 is not UTF-8; save the manifest as UTF-8"


def test_the_inbox_on_a_prefix_finds_the_page_sets_a_folder_inbox_finds(put: Put, root: str, tmp_path: Path) -> None:
    inbox = f"{root}/data/inbox"
    files = {
        "site/a.html": b"<p>a</p>",
        "site/deeper/b.html": b"<p>b</p>",
        "day.warc.gz": WARC.read_bytes(),
        "list.jsonl": b'{"path": "site/a.html"}\n',
        "notes.txt": b"not a page set",
        "loose.html": b"<p>a page alone</p>",
        ".incoming/c.html": b"<p>being copied</p>",
        "done_extracted.json": b"{}",
    }
    tree(put, inbox, tmp_path / "inbox", files)

    remote, local = scan_inbox(ObjectPath.parse(inbox)), scan_inbox(tmp_path / "inbox")

    assert [p.name for p in remote.new] == [p.name for p in local.new] == ["day.warc.gz", "list.jsonl", "site"]
    assert [p.name for p in remote.ignored] == [p.name for p in local.ignored] == ["loose.html", "notes.txt"]
    assert [str(p) for p in remote.new] == [f"{inbox}/day.warc.gz", f"{inbox}/list.jsonl", f"{inbox}/site"]
    assert remote.up_to_date == () and remote.clashes == ()
    assert ignored_advice(remote.inbox) == (
        f"put pages under a prefix of the inbox ({inbox}/NAME/), or list them in a .jsonl manifest there"
    )
    assert "folder" not in ignored_advice(remote.inbox) and "folder" in ignored_advice(local.inbox)

    put(f"{inbox}/site_extracted.json", b"{}")  # the batch of the prefix, written after its pages
    assert [p.name for p in scan_inbox(ObjectPath.parse(inbox)).up_to_date] == ["site"]
    time.sleep(1.1)  # the store's times are in seconds
    put(f"{inbox}/site/deeper/new.html", b"<p>new</p>")  # a page newer than the batch, deep in the prefix
    assert [p.name for p in scan_inbox(ObjectPath.parse(inbox)).new] == ["day.warc.gz", "list.jsonl", "site"]


def test_a_prefix_with_a_dot_in_its_name_is_named_as_the_same_folder_on_a_disk(
    put: Put, root: str, tmp_path: Path
) -> None:
    from selection_extraction.paths import extracted_path

    tree(put, f"{root}/site.v2", tmp_path / "site.v2", {"a.html": b"<p>a</p>"})
    assert (tmp_path / "site.v2").is_dir() and extracted_path(tmp_path / "site.v2").name == "site.v2_extracted.json"
    assert str(extracted_path(f"{root}/site.v2")) == f"{root}/site.v2_extracted.json"
    assert str(extracted_path(f"{root}/site.v2/a.html")) == f"{root}/site.v2/a_extracted.json"  # an object: its stem
