"""The batches of a directory (or a prefix in a store) that still need a selection, and what counts as stale."""

from __future__ import annotations

import os

from selection_core.dataset import BATCH
from selection_core.errors import InvalidBatchError
from selection_storage.paths import DATA_ROOT_ENV, EXTRACTED_LINES_SUFFIX, EXTRACTED_SUFFIX, selected_path
from selection_storage.stores import Entry, Location, location, store

BATCH_SUFFIXES = (EXTRACTED_SUFFIX, EXTRACTED_LINES_SUFFIX)


def is_outdated(output_ns: int | None, input_ns: int) -> bool:
    """The rule of both scans (the batches', the inbox's): an output is outdated when it is missing (None) or was
    last changed before its input (times in nanoseconds)."""
    return output_ns is None or output_ns < input_ns


def _files(directory: Location) -> list[Entry]:
    try:
        return store(directory).files()
    except NotADirectoryError:
        raise InvalidBatchError(
            f"{directory}: not an existing directory; set the directory parameter "
            f"(or {DATA_ROOT_ENV}) to the folder that holds the batches"
        ) from None
    except OSError as exc:
        raise InvalidBatchError(
            f"{exc.filename or directory}: cannot be listed ({exc.strerror or exc}); check its permissions"
        ) from None


def find_batches(directory: str | os.PathLike[str] | Location) -> list[Location]:
    """Every ``*_extracted.json(l)`` file under ``directory`` (a folder, or a prefix in a store), sorted by path;
    hidden and symlinked folders are skipped."""
    return [e.where for e in _files(location(directory, None, "directory")) if e.relative.endswith(BATCH_SUFFIXES)]


def find_stale_batches(directory: str | os.PathLike[str] | Location, output_format: str = BATCH) -> list[Location]:
    """The batches of :func:`find_batches` whose ``_selected.json(l)`` (``_selected.parquet`` for the dataset) is
    missing or older, from one listing."""
    entries = _files(location(directory, None, "directory"))
    by_place = {str(e.where): e for e in entries}
    stale: list[Location] = []
    for entry in entries:
        if entry.relative.endswith(BATCH_SUFFIXES):
            output = by_place.get(str(selected_path(entry.where, output_format)))
            if is_outdated(None if output is None else output.modified_ns(), entry.modified_ns()):
                stale.append(entry.where)
    return stale


def remove_orphans_under(directory: str | os.PathLike[str] | Location) -> list[Location]:
    """Remove what killed writers left under ``directory`` (staged files, or a store's unfinished uploads:
    :meth:`~selection_storage.stores.Store.remove_orphans_under`); what they were for."""
    return store(location(directory, None, "directory")).remove_orphans_under()
