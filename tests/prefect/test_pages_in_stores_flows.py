"""Pages in an object store through the commands and the flows, on each store (``tests/support/object_stores.py``):
``extract`` and ``pipeline`` on a prefix and on a manifest object, the flow ``extract-and-select`` on a prefix, and the
inbox on a prefix. Each batch is compared with the one the same pages on a disk give: the same bytes but for the
input's name, which the batch records.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from selection_cli.main import main
from tests.support import PAGES
from tests.support.object_stores import tree

Put = Callable[[str, bytes], None]
Get = Callable[[str], bytes]

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_data_root_env")]

ONE_PAGE = "06ee193de4bd611f7fafbab0c59b0f6fe3495093516720632cd093b24c7a0e98.html.gz"
ANOTHER_PAGE = "d90bda7ed14df19574f4ca8b1ccde5752a78f40058af1393e81cc99adb3e8756.html.gz"

#: Two real pages, one of them a level down; a hidden page and a note, which are not read.
SITE = {
    "one.html.gz": (PAGES / ONE_PAGE).read_bytes(),
    "deeper/another.html.gz": (PAGES / ANOTHER_PAGE).read_bytes(),
    ".partial/x.html": b"<p>hidden</p>",
    "notes.txt": b"not a page",
}

#: A manifest of the two pages, relative to its own folder (prefix), with their URLs.
MANIFEST = (
    b'{"id": "one", "url": "https://example.org/one", "path": "one.html.gz"}\n'
    b'{"id": "another", "url": "https://example.org/another", "path": "deeper/another.html.gz"}\n'
)


@pytest.fixture
def put(store_server) -> Put:
    return store_server.put


@pytest.fixture
def get(store_server) -> Get:
    return store_server.get


@pytest.fixture
def root(store_server, bucket: str) -> str:
    return store_server.url(bucket).rstrip("/")


@pytest.fixture
def flow_env(prefect_harness: None) -> Iterator[None]:
    """The session's Prefect test harness; the settings ``pipeline`` puts in the environment are undone after."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def as_on_disk(local_batch: Path, local_input: Path, url: str) -> bytes:
    """The bytes of a batch made from ``local_input``, with the input's name that of ``url``."""
    data = local_batch.read_bytes()
    assert str(local_input).encode() in data
    return data.replace(str(local_input).encode(), url.encode())


def test_extract_on_a_prefix_writes_the_bytes_of_the_same_folder_on_a_disk(
    put: Put, get: Get, root: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree(put, f"{root}/site", tmp_path / "site", SITE)

    assert main(["extract", f"{root}/site", "--workers", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "pages: 2 (0 unreadable)",
        "errors: trafilatura 0, newspaper4k 0, readability 0",
        f"extracted: {root}/site_extracted.json",
    ]
    assert main(["extract", str(tmp_path / "site"), "--workers", "1"]) == 0

    written = get(f"{root}/site_extracted.json")
    assert written == as_on_disk(tmp_path / "site_extracted.json", tmp_path / "site", f"{root}/site")
    batch = orjson.loads(written)
    assert batch["extraction"]["input"] == f"{root}/site" and batch["extraction"]["input_kind"] == "directory"
    assert [a["path"] for a in batch["articles"]] == ["deeper/another.html.gz", "one.html.gz"]


@pytest.mark.usefixtures("flow_env")
def test_pipeline_on_a_manifest_object_writes_the_bytes_of_the_same_manifest_on_a_disk(
    put: Put, get: Get, root: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree(put, f"{root}/in", tmp_path / "in", {**SITE, "list.jsonl": MANIFEST})
    manifest = tmp_path / "in" / "list.jsonl"

    assert main(["pipeline", f"{root}/in/list.jsonl", "--workers", "1"]) == 0, capsys.readouterr().err
    assert main(["pipeline", str(manifest), "--workers", "1"]) == 0, capsys.readouterr().err

    for name in ("list_extracted.json", "list_extracted_selected.json"):
        assert get(f"{root}/in/{name}") == as_on_disk(tmp_path / "in" / name, manifest, f"{root}/in/list.jsonl")
    extracted = orjson.loads(get(f"{root}/in/list_extracted.json"))
    assert extracted["extraction"]["input_kind"] == "manifest"
    assert [(a["id"], a["url"]) for a in extracted["articles"]] == [
        ("one", "https://example.org/one"),
        ("another", "https://example.org/another"),
    ]


@pytest.mark.usefixtures("flow_env")
def test_extract_and_select_on_a_prefix_writes_the_bytes_of_the_same_folder_on_a_disk(
    put: Put, get: Get, root: str, tmp_path: Path
) -> None:
    from content_selection.flows.extract_and_select import extract_and_select

    tree(put, f"{root}/site", tmp_path / "site", SITE)

    remote = extract_and_select(pages=f"{root}/site", workers=1, return_state=True)
    on_disk = extract_and_select(pages=str(tmp_path / "site"), workers=1, return_state=True)

    assert remote.is_completed(), remote.message
    assert on_disk.is_completed(), on_disk.message
    summary = remote.result()
    assert (summary.pages_path, summary.articles) == (f"{root}/site", 2)
    assert summary.output_path == f"{root}/site_extracted_selected.json"
    for name in ("site_extracted.json", "site_extracted_selected.json"):
        assert get(f"{root}/{name}") == as_on_disk(tmp_path / name, tmp_path / "site", f"{root}/site"), name


@pytest.mark.usefixtures("flow_env")
def test_the_inbox_on_a_prefix_extracts_a_page_set_of_pages_once(put: Put, get: Get, root: str, tmp_path: Path) -> None:
    from content_selection.flows.extract_inbox import extract_inbox

    inbox = f"{root}/data/inbox"
    tree(put, f"{inbox}/site", tmp_path / "site", SITE)
    put(f"{inbox}/loose.html", b"<p>a page alone is not a page set</p>")

    first = extract_inbox(data_root=f"{root}/data", workers=1, return_state=True)
    again = extract_inbox(data_root=f"{root}/data", workers=1, return_state=True)

    assert first.is_completed(), first.message
    summary = first.result()
    assert summary.extracted == [f"{inbox}/site_extracted.json"] and summary.ignored == [f"{inbox}/loose.html"]
    assert again.is_completed(), again.message
    assert again.result().extracted == [] and again.result().up_to_date == 1
    assert main(["extract", str(tmp_path / "site"), "--workers", "1"]) == 0
    expected = as_on_disk(tmp_path / "site_extracted.json", tmp_path / "site", f"{inbox}/site")
    assert get(f"{inbox}/site_extracted.json") == expected
