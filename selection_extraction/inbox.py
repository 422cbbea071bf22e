"""The inbox: a folder (or a prefix in a store) under the data root where page sets are dropped, and which of them
need extracting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from selection_core.errors import UnsafePathError
from selection_core.jsonl import JSONL_SUFFIX, is_jsonl
from selection_extraction.pages import InvalidPagesError
from selection_extraction.paths import extracted_path
from selection_extraction.warc import is_warc_name
from selection_storage.directory import is_outdated
from selection_storage.paths import (
    DATA_ROOT_ENV,
    EXTRACTED_LINES_SUFFIX,
    EXTRACTED_SUFFIX,
    SELECTED_LINES_SUFFIX,
    SELECTED_SUFFIX,
    data_root_in_force,
)
from selection_storage.stores import Location, ObjectPath, store

#: Name of the default inbox, directly under the data root.
INBOX_DIR: Final[str] = "inbox"

#: Names of the batches this stage writes, never page sets.
OUTPUT_SUFFIXES: Final[tuple[str, ...]] = (
    EXTRACTED_SUFFIX,
    SELECTED_SUFFIX,
    EXTRACTED_LINES_SUFFIX,
    SELECTED_LINES_SUFFIX,
)


@dataclass(frozen=True)
class InboxScan:
    """What one look at the inbox found, in name order: page sets to extract, those up to date, a message per
    page set whose batch name another shares, and files that are neither page sets nor batches."""

    inbox: Location
    new: tuple[Location, ...]
    up_to_date: tuple[Location, ...]
    clashes: tuple[str, ...]
    ignored: tuple[Location, ...]


def prepare_inbox(inbox: str | None, data_root: str | None, storage_options: dict[str, Any] | None = None) -> Location:
    """The resolved inbox (None: ``<data root>/inbox``, created when missing) inside the data root; under a data
    root in a store, a prefix (nothing to create).

    Raises:
        UnsafePathError: no data root is configured, or the inbox lies outside it.
        InvalidPagesError: a named inbox is not an existing directory.
    """
    in_force = data_root_in_force(data_root, storage_options=storage_options)
    if in_force is None:
        raise UnsafePathError(
            f"no data root is configured, and the inbox and its batches must lie inside one; "
            f"set {DATA_ROOT_ENV} (or the data_root parameter) to the directory that holds the inbox"
        )
    root = in_force.path
    folder = in_force.confine(inbox if inbox else root / INBOX_DIR, "inbox")
    if isinstance(folder, ObjectPath):
        return folder
    if not inbox:
        folder.mkdir(exist_ok=True)
    if not folder.is_dir():
        raise InvalidPagesError(
            f"{folder}: the inbox is not an existing directory; create it, or leave the inbox "
            f"parameter empty for {root / INBOX_DIR}"
        )
    return folder


def is_page_set_name(name: str) -> bool:
    """Whether a file directly in the inbox is a page set: a WARC file or a manifest."""
    return is_warc_name(name) or (is_jsonl(name) and len(name) > len(JSONL_SUFFIX))


def scan_inbox(inbox: Location) -> InboxScan:
    """Sort the entries directly in ``inbox`` (a folder, or a prefix in a store) into page sets new and up to date;
    InvalidPagesError if unlistable. The page sets are the folders (sub-prefixes) of pages, the web archives and
    the manifests; a page set is new when something in it is newer than its batch."""
    try:
        listed = store(inbox).children()  # hidden names skipped
    except OSError as exc:
        raise InvalidPagesError(
            f"{inbox}: cannot list the inbox ({exc.strerror or exc}); check its permissions"
        ) from None
    page_sets: list[Location] = []
    ignored: list[Location] = []
    for entry in listed:
        if entry.relative.endswith(OUTPUT_SUFFIXES) and not entry.is_folder:
            continue  # a batch this stage wrote (a JSON Lines batch is not a page manifest)
        if entry.is_folder or is_page_set_name(entry.relative):
            page_sets.append(entry.where)
        else:
            ignored.append(entry.where)

    by_output: dict[Location, list[Location]] = {}
    for entry in page_sets:
        by_output.setdefault(extracted_path(entry), []).append(entry)
    clashes = [
        f"{entry}: {', '.join(o.name for o in entries if o != entry)} would write the same batch {output}; "
        "rename one of them"
        for output, entries in sorted(by_output.items(), key=lambda item: str(item[0]))
        if len(entries) > 1
        for entry in entries
    ]
    single = sorted((entries[0] for entries in by_output.values() if len(entries) == 1), key=str)
    by_place = {str(entry.where): entry for entry in listed}

    def is_new(page_set: Location) -> bool:
        batch = by_place.get(str(extracted_path(page_set)))
        return is_outdated(None if batch is None else batch.modified_ns(), by_place[str(page_set)].modified_ns())

    new = [entry for entry in single if is_new(entry)]
    return InboxScan(
        inbox=inbox,
        new=tuple(new),
        up_to_date=tuple(entry for entry in single if entry not in new),
        clashes=tuple(clashes),
        ignored=tuple(ignored),
    )


def ignored_advice(inbox: Location) -> str:
    """What to do with the entries of ``inbox`` that are not page sets (a loose page, a note)."""
    if store(inbox).folder_noun == "prefix":
        return f"put pages under a prefix of the inbox ({inbox}/NAME/), or list them in a .jsonl manifest there"
    return "put pages in a folder inside the inbox, or list them in a .jsonl manifest there"


def failures_message(failures: list[str], page_sets: int) -> str:
    """The message of an inbox run in which some page sets failed (each named once, and clashes)."""
    return f"{len(failures)} of {page_sets} page set(s) failed, the others were extracted: {'; '.join(failures)}"
