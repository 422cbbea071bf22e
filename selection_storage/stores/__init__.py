"""Where a batch lives: a local file, or an object in a store (``s3://``, ``gs://``, ``az://``, ``memory://``)
reached through fsspec, each backend from its own package (``pip install 'content-selection[s3]'``).

A local path behaves exactly as without this package; ``file://`` URLs are local paths. An object is read in
ranges of one known version (its ETag, version or generation; a change is an :class:`InputChangedError`), and
written by one upload that the store completes last (a multipart upload on S3, aborted on any failure), so an
output object appears whole or not at all. Credentials come from where each backend's users set them
(environment, profiles, instance roles; ``AWS_ENDPOINT_URL`` for an S3-compatible store), and from the run's
``storage_options``, which are never put in a message; their credentials are masked (``secrets``) so that
Prefect does not store them with the run's parameters.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from selection_storage.atomic import Staged, commit_in_order
from selection_storage.stores.disk import DiskStore
from selection_storage.stores.endpoints import connection_refusal
from selection_storage.stores.entries import Entry
from selection_storage.stores.objects import ObjectStore, listed_versions
from selection_storage.stores.protocol import Store
from selection_storage.stores.retries import retried
from selection_storage.stores.urls import Location, ObjectPath, is_url, local_text, location

__all__ = [
    "Entry",
    "Location",
    "ObjectPath",
    "beside",
    "connection_refusal",
    "is_url",
    "listed_versions",
    "local_text",
    "location",
    "remove_orphans_beside",
    "store",
    "write_atomic",
    "write_atomic_group",
]


def store(p: Location) -> Store:
    """The store that holds ``p``, bound to it: where the implementation is chosen, once."""
    return ObjectStore(p) if isinstance(p, ObjectPath) else DiskStore(p)


def beside(p: Location, name: str) -> Location:
    """Where an output named ``name`` goes by default for the input ``p``: beside it, or in the current folder when
    nothing is written where it is (a web server's file, as a download goes)."""
    if isinstance(p, ObjectPath) and not p.backend.writable:
        return Path(name)
    return p.with_name(name)


def write_atomic(target: str | os.PathLike[str] | ObjectPath, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` to ``target`` atomically: a reader sees the previous file or the complete new one.

    Raises:
        OutputPathError: permission denied or read-only file system.
        WriteError: disk full or another I/O error; nothing was written.
    """
    where = location(target, None, "output")
    if isinstance(data, bytes | list | tuple):  # the data can be given again: a failed write is tried again whole
        retried(lambda: write_atomic_group([(where, data)]))
    else:
        write_atomic_group([(where, data)])


def remove_orphans_beside(targets: Iterable[Location]) -> None:
    """Remove the staged files whose writer is gone beside these outputs, once a folder."""
    for _, target in sorted({str(t.parent): t for t in targets}.items()):
        store(target).remove_orphans_beside()


def write_atomic_group(items: Sequence[tuple[Location, bytes | Iterable[bytes]]]) -> None:
    """Write several files (or objects): all are staged, then renamed (uploads completed) in order; only a failed
    rename leaves the earlier ones."""
    staged: list[Staged] = []
    try:
        remove_orphans_beside(target for target, _ in items)
        for target, data in items:
            staged.append(store(target).stage())
            staged[-1].write_all([data] if isinstance(data, bytes) else data)
    except BaseException:
        for done in staged:
            done.discard()
        raise
    commit_in_order(staged)
