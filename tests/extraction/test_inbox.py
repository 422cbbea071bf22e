"""The inbox rules (selection_extraction.inbox): where it is, what a page set is, what is new, clashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selection_core.errors import UnsafePathError
from selection_extraction import InvalidPagesError
from selection_extraction.inbox import INBOX_DIR, prepare_inbox, scan_inbox
from selection_storage.directory import is_outdated
from selection_storage.paths import DATA_ROOT_ENV

#: A fixed modification time (ns); every age in these tests is set from it, none read from the clock.
T0 = 1_700_000_000_000_000_000


def touch(path: Path, ns: int, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text)
    os.utime(path, ns=(ns, ns))
    return path


def folder(path: Path, ns: int) -> Path:
    touch(path / "a.html", ns)
    os.utime(path, ns=(ns, ns))
    return path


# --- what is a page set ------------------------------------------------------------------


def test_page_sets_are_folders_warc_files_and_manifests_directly_in_the_inbox(tmp_path: Path) -> None:
    folder(tmp_path / "news", T0)
    touch(tmp_path / "crawl.warc.gz", T0)
    touch(tmp_path / "CRAWL2.WARC", T0)
    touch(tmp_path / "list.jsonl", T0)
    touch(tmp_path / "loose.html", T0)
    touch(tmp_path / "notes.txt", T0)
    touch(tmp_path / "old_extracted.json", T0)  # batches the chain writes: neither inputs nor ignored
    touch(tmp_path / "old_extracted_selected.json", T0)
    folder(tmp_path / ".copying", T0)  # hidden: skipped until renamed
    touch(tmp_path / ".half.warc.gz", T0)

    scan = scan_inbox(tmp_path)

    assert [p.name for p in scan.new] == ["CRAWL2.WARC", "crawl.warc.gz", "list.jsonl", "news"]
    assert [p.name for p in scan.ignored] == ["loose.html", "notes.txt"]
    assert scan.up_to_date == () and scan.clashes == ()


# --- what "new" means -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("batch_ns", "new"),
    [
        pytest.param(None, True, id="no-batch"),
        pytest.param(T0 - 1, True, id="batch-older"),
        pytest.param(T0, False, id="batch-as-old"),
        pytest.param(T0 + 1, False, id="batch-newer"),
    ],
)
def test_a_page_set_is_new_until_its_batch_is_as_new_as_its_newest_page(
    tmp_path: Path, batch_ns: int | None, new: bool
) -> None:
    pages = folder(tmp_path / "news", T0 - 10)
    touch(pages / "deep" / "later.html.gz", T0)  # the newest entry, two levels down
    os.utime(pages, ns=(T0 - 10, T0 - 10))
    os.utime(pages / "deep", ns=(T0 - 10, T0 - 10))
    if batch_ns is not None:
        touch(tmp_path / "news_extracted.json", batch_ns)

    scan = scan_inbox(tmp_path)

    assert (scan.new, scan.up_to_date) == (((pages,), ()) if new else ((), (pages,)))


def test_hidden_entries_inside_a_folder_do_not_make_it_new(tmp_path: Path) -> None:
    pages = folder(tmp_path / "news", T0)
    touch(tmp_path / "news_extracted.json", T0)
    touch(pages / ".partial.html", T0 + 5)
    os.utime(pages, ns=(T0, T0))
    assert scan_inbox(tmp_path).up_to_date == (pages,)


def test_a_changed_manifest_or_warc_file_is_new_again(tmp_path: Path) -> None:
    manifest = touch(tmp_path / "list.jsonl", T0)
    warc = touch(tmp_path / "crawl.warc", T0)
    touch(tmp_path / "list_extracted.json", T0 + 1)
    touch(tmp_path / "crawl_extracted.json", T0 + 1)
    assert scan_inbox(tmp_path).new == ()
    os.utime(manifest, ns=(T0 + 2, T0 + 2))
    assert scan_inbox(tmp_path).new == (manifest,)
    assert scan_inbox(tmp_path).up_to_date == (warc,)


def test_is_outdated_is_the_rule_of_both_scans() -> None:
    assert is_outdated(None, T0)
    assert not is_outdated(T0, T0) and is_outdated(T0, T0 + 1)


def test_page_sets_that_would_write_the_same_batch_are_both_refused(tmp_path: Path) -> None:
    folder(tmp_path / "news", T0)
    touch(tmp_path / "news.jsonl", T0)
    touch(tmp_path / "other.warc.gz", T0)

    scan = scan_inbox(tmp_path)

    assert [p.name for p in scan.new] == ["other.warc.gz"]
    assert scan.clashes == (
        f"{tmp_path / 'news'}: news.jsonl would write the same batch {tmp_path / 'news_extracted.json'}; "
        "rename one of them",
        f"{tmp_path / 'news.jsonl'}: news would write the same batch {tmp_path / 'news_extracted.json'}; "
        "rename one of them",
    )


def test_the_scan_order_is_the_names_order_whatever_the_creation_order(tmp_path: Path) -> None:
    for name in ["b", "a", "c"]:
        folder(tmp_path / name, T0)
    assert [p.name for p in scan_inbox(tmp_path).new] == ["a", "b", "c"]


# --- where the inbox is ------------------------------------------------------------------


@pytest.mark.usefixtures("no_data_root_env")
def test_the_inbox_needs_a_data_root() -> None:
    with pytest.raises(UnsafePathError, match="no data root is configured"):
        prepare_inbox(None, None)


def test_the_default_inbox_is_created_under_the_data_root(data_root: Path) -> None:
    assert prepare_inbox(None, None) == data_root.resolve() / INBOX_DIR
    assert (data_root / INBOX_DIR).is_dir()
    assert prepare_inbox("", str(data_root)) == data_root.resolve() / INBOX_DIR


def test_a_named_inbox_must_exist(data_root: Path) -> None:
    with pytest.raises(InvalidPagesError, match="the inbox is not an existing directory") as info:
        prepare_inbox("drop", None)
    assert "\n" not in str(info.value) and not (data_root / "drop").exists()
    (data_root / "drop").mkdir()
    assert prepare_inbox("drop", None) == data_root.resolve() / "drop"


@pytest.mark.parametrize("inbox", ["{outside}", "{root}/../outside", "{root}/link"], ids=["absolute", "dotdot", "link"])
def test_an_inbox_outside_the_data_root_is_refused(data_root: Path, tmp_path: Path, inbox: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (data_root / "link").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="outside the data root"):
        prepare_inbox(inbox.format(outside=outside, root=data_root), None)


def test_a_refusal_names_the_data_root_parameter_when_it_was_given(data_root: Path, tmp_path: Path) -> None:
    # `data_root` (the fixture) is also $CONTENT_SELECTION_DATA_ROOT: the parameter wins, and is named.
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(UnsafePathError, match=r"change the data_root parameter\)$"):
        prepare_inbox(str(outside), str(data_root))
    with pytest.raises(UnsafePathError, match="point the data_root parameter at an existing directory"):
        prepare_inbox(None, str(tmp_path / "missing"))


def test_a_refusal_names_the_environment_variable_when_it_set_the_root(
    data_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(UnsafePathError, match=rf"change {DATA_ROOT_ENV}\)$"):
        prepare_inbox(str(outside), None)
    monkeypatch.setenv(DATA_ROOT_ENV, str(tmp_path / "missing"))
    with pytest.raises(UnsafePathError, match=f"point {DATA_ROOT_ENV} at an existing directory"):
        prepare_inbox(None, None)
