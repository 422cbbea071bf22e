"""What every store does (:class:`Store`): a local disk (:mod:`~selection_storage.stores.disk`) and an object
store (:mod:`~selection_storage.stores.objects`) each implement it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from selection_storage.atomic import Staged
from selection_storage.files import Version
from selection_storage.stores.backend import UPLOAD_PART_BYTES
from selection_storage.stores.entries import Entry
from selection_storage.stores.urls import Location


class Store(Protocol):
    """A file or an object, bound to its place (:attr:`path`): the operations that differ between local disks and
    object stores. :func:`store` chooses the implementation, once."""

    path: Location
    options: Mapping[str, Any]  # the run's storage options (none for a file)
    folder_noun: str  # what a folder is called here: a "directory", a "prefix" (a "web server": none)

    def version(self) -> Version: ...

    def reading(self) -> contextlib.AbstractContextManager[tuple[Version, Callable[[int], bytes]]]:
        """Opened for one pass from its start: the version read, and ``read(n)``."""

    def read_span(self, version: Version, start: int, end: int, before: bytes = b"", after: bytes = b"") -> bytearray:
        """``before + <bytes start..end> + after`` of ``version``; an ``InputChangedError`` if it is no longer it."""

    def open(self, block_size: int = UPLOAD_PART_BYTES) -> BinaryIO:
        """Opened for streaming reads, seekable, an object read ahead ``block_size`` bytes at a time; each failure of
        a store one typed error (:func:`store_error`)."""

    def size(self) -> int: ...

    def stage(self, token: str | None = None) -> Staged:
        """The output staged here (a file's temporary name with ``token``, random by default)."""

    def part(self, token: str, number: int) -> str | None:
        """Where chunk ``number`` of the output staged with ``token`` is written; None: its bytes come back."""

    def remove_orphans_beside(self) -> None:
        """Remove the staged outputs whose writer is gone from this output's folder."""

    def remove(self) -> None:
        """Remove this file (object) if it is there; a store that fails raises its typed error."""

    def make_folders(self) -> None:
        """Make this folder and those above it where a folder must exist before a file is written in it (a disk:
        an ``OSError`` if it cannot be made); nothing on an object store."""

    def check_output(self, source: Store, option: str) -> None:
        """An ``OutputPathError`` (naming ``option``) if the output cannot go here: the input, a folder..."""

    def kind(self) -> str | None:
        """``"file"`` (an object), ``"folder"`` (a prefix with objects under it), or None when nothing is there; a
        store that fails raises its typed error."""

    def files(self) -> list[Entry]:
        """Every file under this folder (object under this prefix), hidden names skipped at every level and folders
        linked to not followed, sorted by relative path; nothing under a prefix is an empty list, and a folder that
        is not there an ``OSError``."""

    def children(self) -> list[Entry]:
        """The files and folders (objects and sub-prefixes) directly in this one, hidden names skipped, by name;
        a folder that cannot be listed an ``OSError``."""

    def listed(self) -> dict[str, Version]:
        """The files directly in this folder (objects directly under this prefix) by name, hidden names skipped, each
        with its version as one listing tells it (:meth:`listed_version`'s); a folder that is not there: empty."""

    def listed_version(self) -> Version | None:
        """This file's version as its folder's :meth:`listed` tells it (an object's ETag or generation, not its
        version id, which a listing omits); None when nothing is here."""

    def remove_orphans_under(
        self, stopped: Callable[[str], bool] | None = None, started_before: float | None = None
    ) -> list[Location]:
        """Remove what killed writers left under this folder (staged files, whose writer's lock is free; a store's
        unfinished uploads over an hour old, or of any age when ``stopped(key under the folder)`` says the caller
        knows its writer stopped and the upload started before ``started_before``, the store's time, when given);
        what they were for."""

    def resolve(self) -> Location:
        """Symbolic links and ``..`` followed (an object is its own)."""

    def absolute(self) -> Location:
        """``~`` expanded, made absolute (an object is its own)."""

    def spool_folder(self) -> Path | None:
        """Where a temporary file written on the way to this output goes (None: the temporary folder)."""
