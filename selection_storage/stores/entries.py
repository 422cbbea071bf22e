"""What a listing tells: an object's version and time from its entry, every object under a prefix, and the
:class:`Entry` of a file or folder found."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from selection_core.errors import InvalidBatchError
from selection_storage.files import Version
from selection_storage.stores.backend import timestamp
from selection_storage.stores.failures import store_error
from selection_storage.stores.urls import Location, ObjectPath

#: The fields of a listing's entry that tell an object's version (a listing has no version id), by preference (a web
#: server's file without an ETag: its Last-Modified).
_LISTED_TAGS: Final[tuple[str, ...]] = ("ETag", "generation", "etag", "Last-Modified")


def _version_of(entry: Mapping[str, Any], tags: Sequence[str]) -> Version:
    for name in tags:
        if entry.get(name):
            return Version(int(entry["size"]), f"{name}:{entry[name]}")
    return Version(int(entry["size"]), f"modified:{modified(entry)}")


def object_version(entry: Mapping[str, Any]) -> Version:
    """An object's version from its entry: its size and its version id, else its ETag or generation."""
    return _version_of(entry, ("VersionId", *_LISTED_TAGS, "version_id"))


def listed_version(entry: Mapping[str, Any]) -> Version:
    """An object's version as a listing tells it: its size and its ETag or generation."""
    return _version_of(entry, _LISTED_TAGS)


def modified(info: Mapping[str, Any]) -> float:
    """An object's modification time (seconds since the epoch) from its listing entry."""
    for name in ("LastModified", "mtime", "updated", "last_modified", "modified", "created"):
        value = info.get(name)
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, datetime) or (isinstance(value, str) and value):
            return timestamp(value)
    return 0.0


def modified_ns(entry: Mapping[str, Any]) -> int:
    return round(modified(entry) * 1e9)


def walk_objects(prefix: ObjectPath) -> Iterator[tuple[ObjectPath, dict[str, Any]]]:
    """Every object under ``prefix`` (keys with a hidden segment skipped), sorted by key, with its entry; an
    ``InvalidBatchError`` on a store that gives no listing (a web server)."""
    check_listable(prefix)
    fs = prefix.filesystem()
    try:
        found: dict[str, dict[str, Any]] = fs.find(prefix.key, detail=True)
    except Exception as exc:  # noqa: BLE001
        raise store_error(prefix, exc) from None
    for key in sorted(found):
        relative = key[len(prefix.key) :].strip("/")
        if any(part.startswith(".") for part in relative.split("/")):
            continue
        yield ObjectPath(prefix.protocol, key.strip("/"), prefix.options), found[key]


def check_listable(prefix: ObjectPath) -> None:
    """An ``InvalidBatchError`` when ``prefix``'s store gives no listing of its files (a web server)."""
    if not prefix.backend.listable:
        raise InvalidBatchError(
            f"{prefix}: a web server gives no listing of its files; give the URL of each file, or a listing of "
            "them (a text file of URLs, one per line, such as Common Crawl's warc.paths.gz)"
        )


@dataclass(frozen=True)
class Entry:
    """A file or a folder found by a listing (an object or a prefix in a store), hidden names skipped."""

    relative: str  # its ``/``-separated path under the folder listed
    where: Location
    is_folder: bool = False
    newest: int | None = None  # :meth:`modified_ns` when the listing told it (a store's); None: asked when needed

    def modified_ns(self) -> int:
        """When it was last changed (a folder: the newest of it and of everything under it), in nanoseconds."""
        if self.newest is not None:
            return self.newest
        path = Path(self.where)
        newest = path.stat().st_mtime_ns
        if not self.is_folder:
            return newest
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in [*dirnames, *filenames]:
                if not name.startswith("."):
                    try:
                        newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
                    except OSError:  # vanished, or a broken link: its reader reports it
                        continue
        return newest
