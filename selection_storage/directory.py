"""The batches of a directory that still need a selection: the walk, and what counts as stale."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from selection_core.errors import InvalidBatchError
from selection_storage.atomic import TMP_SUFFIX, remove_orphans
from selection_storage.paths import DATA_ROOT_ENV, EXTRACTED_LINES_SUFFIX, EXTRACTED_SUFFIX, selected_path
from selection_storage.stores import Location, ObjectPath, abort_stale_uploads, location, modified, walk_objects

BATCH_SUFFIXES = (EXTRACTED_SUFFIX, EXTRACTED_LINES_SUFFIX)


def is_outdated(output: Path, input_mtime_ns: int) -> bool:
    """True when ``output`` is missing or older than an input last modified at ``input_mtime_ns``."""
    try:
        output_mtime = output.stat().st_mtime_ns
    except FileNotFoundError:
        return True
    return output_mtime < input_mtime_ns


def is_stale(input_path: Path) -> bool:
    """True when the default output of ``input_path`` is missing or older than the input."""
    return is_outdated(selected_path(input_path), input_path.stat().st_mtime_ns)


def _walk(directory: Path) -> Iterator[tuple[str, list[str]]]:
    """Each folder under ``directory`` (symlinked and hidden ones skipped), with its file names."""
    if not directory.is_dir():
        raise InvalidBatchError(
            f"{directory}: not an existing directory; set the directory parameter "
            f"(or {DATA_ROOT_ENV}) to the folder that holds the batches"
        )
    for dirpath, dirnames, filenames in os.walk(directory, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        yield dirpath, filenames


def find_batches(directory: Path) -> list[Path]:
    """Every ``*_extracted.json(l)`` file under ``directory``, sorted; symlinked and hidden directories are skipped."""
    found = [Path(d) / name for d, names in _walk(directory) for name in names if name.endswith(BATCH_SUFFIXES)]
    return sorted(found)


def _stale_objects(prefix: ObjectPath) -> list[Location]:
    """:func:`find_stale_batches` on a prefix: from the objects' modification times, in one listing."""
    objects = dict(walk_objects(prefix))  # sorted by key
    stale: list[Location] = []
    for p, entry in objects.items():
        if p.name.endswith(BATCH_SUFFIXES):
            output = objects.get(selected_path(p))
            if output is None or modified(output) < modified(entry):
                stale.append(p)
    return stale


def find_stale_batches(directory: str | os.PathLike[str] | Location) -> list[Location]:
    """The ``*_extracted.json(l)`` files under ``directory`` (a folder, or a prefix in a store) whose
    ``_selected.json(l)`` is missing or older, sorted; hidden folders (and keys) are skipped."""
    where = location(directory, None, "directory")
    if isinstance(where, ObjectPath):
        return _stale_objects(where)
    return [path for path in find_batches(where) if is_stale(path)]


def remove_orphans_under(directory: str | os.PathLike[str] | Location) -> list[Location]:
    """:func:`~selection_storage.atomic.remove_orphans` in every folder :func:`find_batches` walks; what it removed.
    Under a prefix in a store: the unfinished uploads of killed writers are aborted
    (:func:`~selection_storage.stores.abort_stale_uploads`), and the objects they were for returned."""
    if isinstance(directory, ObjectPath):
        return list(abort_stale_uploads(directory))
    return [
        path
        for d, names in _walk(Path(directory))
        if any(n.endswith(TMP_SUFFIX) for n in names)
        for path in remove_orphans(d)
    ]
