"""The inbox: a folder under the data root where page sets are dropped, and which of them need extracting."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from selection_core.errors import UnsafePathError
from selection_extraction.pages import InvalidPagesError
from selection_extraction.paths import extracted_path, refuse_objects
from selection_extraction.warc import is_warc_name
from selection_storage.directory import is_outdated
from selection_storage.paths import (
    DATA_ROOT_ENV,
    EXTRACTED_LINES_SUFFIX,
    EXTRACTED_SUFFIX,
    SELECTED_LINES_SUFFIX,
    SELECTED_SUFFIX,
    configured_data_root,
    data_root_in_force,
    name_once,
)

#: Name of the default inbox, directly under the data root.
INBOX_DIR: Final[str] = "inbox"

#: What the name of a manifest in the inbox ends with (matched case-insensitively).
MANIFEST_SUFFIX: Final[str] = ".jsonl"

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

    inbox: Path
    new: tuple[Path, ...]
    up_to_date: tuple[Path, ...]
    clashes: tuple[str, ...]
    ignored: tuple[Path, ...]


def prepare_inbox(inbox: str | None, data_root: str | None) -> Path:
    """The resolved inbox (None: ``<data root>/inbox``, created when missing) inside the data root.

    Raises:
        UnsafePathError: no data root is configured, or the inbox lies outside it.
        InvalidPagesError: a named inbox is not an existing directory.
    """
    refuse_objects(inbox, configured_data_root(data_root))
    in_force = data_root_in_force(data_root)
    if in_force is None:
        raise UnsafePathError(
            f"no data root is configured, and the inbox and its batches must lie inside one; "
            f"set {DATA_ROOT_ENV} (or the data_root parameter) to the directory that holds the inbox"
        )
    root = in_force.path
    folder = in_force.confine(inbox if inbox else root / INBOX_DIR, "inbox")
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
    return is_warc_name(name) or (name.lower().endswith(MANIFEST_SUFFIX) and len(name) > len(MANIFEST_SUFFIX))


def scan_inbox(inbox: Path) -> InboxScan:
    """Sort the entries directly in ``inbox`` into page sets new and up to date; InvalidPagesError if unlistable."""
    page_sets: list[Path] = []
    ignored: list[Path] = []
    try:
        names = sorted(os.listdir(inbox))
    except OSError as exc:
        raise InvalidPagesError(
            f"{inbox}: cannot list the inbox ({exc.strerror or exc}); check its permissions"
        ) from None
    for name in names:
        entry = inbox / name
        if name.startswith("."):
            continue
        if name.endswith(OUTPUT_SUFFIXES) and not entry.is_dir():
            continue  # a batch this stage wrote (a JSON Lines batch is not a page manifest)
        if entry.is_dir() or is_page_set_name(name):
            page_sets.append(entry)
        else:
            ignored.append(entry)

    by_output: dict[Path, list[Path]] = {}
    for entry in page_sets:
        by_output.setdefault(extracted_path(entry), []).append(entry)
    clashes = [
        f"{entry}: {', '.join(o.name for o in entries if o != entry)} would write the same batch {output}; "
        "rename one of them"
        for output, entries in sorted(by_output.items())
        if len(entries) > 1
        for entry in entries
    ]
    single = sorted(entries[0] for entries in by_output.values() if len(entries) == 1)
    new = [entry for entry in single if is_outdated(extracted_path(entry), _newest_mtime_ns(entry))]
    return InboxScan(
        inbox=inbox,
        new=tuple(new),
        up_to_date=tuple(entry for entry in single if entry not in new),
        clashes=tuple(clashes),
        ignored=tuple(ignored),
    )


def _newest_mtime_ns(entry: Path) -> int:
    """The newest modification time of a file, or of a folder and everything under it."""
    newest = entry.stat().st_mtime_ns
    if not entry.is_dir():
        return newest
    for dirpath, dirnames, filenames in os.walk(entry, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in [*dirnames, *filenames]:
            if not name.startswith("."):
                try:
                    newest = max(newest, (Path(dirpath) / name).stat().st_mtime_ns)
                except OSError:  # vanished or a broken link: the extraction reports it
                    continue
    return newest


def failure_line(page_set: Path, error: str) -> str:
    """One failed page set and its error, the page set named once."""
    return name_once(page_set, error)


def failures_message(failures: list[str], page_sets: int) -> str:
    """The message of an inbox run in which some page sets failed (:func:`failure_line` s and clashes)."""
    return f"{len(failures)} of {page_sets} page set(s) failed, the others were extracted: {'; '.join(failures)}"
