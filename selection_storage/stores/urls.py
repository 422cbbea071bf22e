"""Places: a local path, or an object's URL (:class:`ObjectPath`), and the kind of store each URL scheme names."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final

from selection_core.errors import (
    InvalidBatchError,
    MissingExtraError,
    OutputPathError,
    ServiceUnavailableError,
    UnsafePathError,
)
from selection_storage.stores.azure import Azure
from selection_storage.stores.backend import Backend
from selection_storage.stores.endpoints import refusal_once
from selection_storage.stores.gcs import GCS
from selection_storage.stores.http import HTTP
from selection_storage.stores.memory import Memory
from selection_storage.stores.s3 import S3

_SCHEME: Final[re.Pattern[str]] = re.compile(r"\A([A-Za-z][A-Za-z0-9+.-]*)://")

#: The kind of store of each URL scheme; any other scheme is fsspec's, with :class:`Backend`'s defaults.
BACKENDS: Final[dict[str, Backend]] = {
    **dict.fromkeys(("s3", "s3a"), S3()),
    **dict.fromkeys(("gs", "gcs"), GCS()),
    **dict.fromkeys(("az", "abfs", "abfss"), Azure()),
    "adl": Backend("azure"),  # Azure Data Lake Gen1: adlfs's other file system
    **dict.fromkeys(("http", "https"), HTTP()),
    "memory": Memory(),
}

#: What a place is called where a run writes (refused on a store where nothing is written).
_WRITTEN: Final[frozenset[str]] = frozenset({"output", "data root"})
_OTHER: Final[Backend] = Backend()


def is_url(text: str | os.PathLike[str] | ObjectPath) -> bool:
    """Whether ``text`` names an object in a store (a URL other than ``file://``)."""
    if isinstance(text, ObjectPath):
        return True
    m = _SCHEME.match(os.fspath(text))
    return m is not None and m[1].lower() != "file"


def local_text(text: str) -> str:
    """A ``file://`` URL as the local path it names; any other text as it is."""
    m = _SCHEME.match(text)
    if m is not None and m[1].lower() == "file":
        from urllib.parse import unquote, urlsplit

        return unquote(urlsplit(text).path)
    return text


@dataclass(frozen=True)
class ObjectPath:
    """An object's URL, ``<protocol>://<bucket>/<key>``: its key normalised, never with ``.`` or ``..`` segments;
    ``options`` (the run's ``storage_options``) travel with it and are never shown."""

    protocol: str
    key: str
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @classmethod
    def parse(cls, url: str, options: Mapping[str, Any] | None = None, what: str = "input") -> ObjectPath:
        """The object at ``url``; an ``UnsafePathError`` for a URL with ``.`` or ``..`` segments or no bucket."""
        m = _SCHEME.match(url)
        if m is None or "\x00" in url:
            raise UnsafePathError(f"{what} path {url!r} is not a URL of an object; write it as s3://BUCKET/KEY")
        rest = url[m.end() :]
        segments = rest.split("/")
        if any(s in (".", "..") for s in segments):
            raise UnsafePathError(f"{what} path {url!r} has '.' or '..' segments; give the object's own URL")
        key = "/".join(s for s in segments if s)
        if not key:
            raise UnsafePathError(f"{what} path {url!r} names no bucket; write it as {m[1]}://BUCKET/KEY")
        found = cls(m[1].lower(), key, dict(options or {}))
        if what in _WRITTEN:
            found.check_writable(what)
        return found

    def check_writable(self, what: str = "output") -> None:
        """An ``OutputPathError`` when nothing can be written here (a web server's files are only read)."""
        if not self.backend.writable:
            raise OutputPathError(
                f"{what} {self}: a web server's files are only read, never written; give another {what}: a path "
                "on this machine, or an s3://, gs:// or az:// URL"
            )

    def __str__(self) -> str:
        return f"{self.protocol}://{self.key}"

    @property
    def backend(self) -> Backend:
        """What its kind of store does beyond fsspec's common interface."""
        return BACKENDS.get(self.protocol, _OTHER)

    @property
    def fs_path(self) -> str:
        """The path its fsspec file system takes (the key; a web server's: the whole URL)."""
        return self.backend.fs_path(self.protocol, self.key)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parent(self) -> ObjectPath:
        return ObjectPath(self.protocol, posixpath.dirname(self.key) or self.key, self.options)

    def with_name(self, name: str) -> ObjectPath:
        return ObjectPath(self.protocol, posixpath.join(posixpath.dirname(self.key), name), self.options)

    def joinpath(self, relative: str, what: str = "input") -> ObjectPath:
        """The object ``relative`` (a path under this prefix) names."""
        return ObjectPath.parse(f"{self}/{relative}", self.options, what)

    def __truediv__(self, relative: str) -> ObjectPath:
        return self.joinpath(relative)

    def is_relative_to(self, root: ObjectPath) -> bool:
        return self.protocol == root.protocol and (self.key == root.key or self.key.startswith(root.key + "/"))

    def filesystem(self) -> Any:
        """The fsspec file system of this object's protocol, with the run's options (cached by fsspec). A store whose
        endpoint is set (an emulator, an S3-compatible service) is checked to accept a connection, once a process:
        the clients retry a refused connection for up to a minute and a half before they give up."""
        from selection_storage.stores.secrets import revealed  # pydantic: not for a command on local files

        backend = self.backend
        options = revealed(self.options)  # the credentials, masked everywhere else
        endpoint = backend.endpoint(options)
        if endpoint is not None:
            reason = refusal_once(endpoint)
            if reason is not None:
                raise ServiceUnavailableError(
                    f"{self}: the store cannot be reached at {endpoint} ({reason}); check its endpoint "
                    f"({backend.endpoint_setting}) and the network, then run again"
                )
        try:
            return backend.filesystem_class(self.protocol, options)(**options)
        except ImportError:
            what = f"{self}: {self.protocol}:// paths need a backend that is not installed"
            if backend.extra is None:
                raise InvalidBatchError(f"{what}; install its fsspec backend") from None
            raise MissingExtraError(what, backend.extra) from None
        except (TypeError, ValueError) as exc:
            raise InvalidBatchError(
                f"{self}: the storage options are refused ({type(exc).__name__}); check them"
            ) from None


#: A batch's place: a local file, or an object.
Location = Path | ObjectPath


def location(
    text: str | os.PathLike[str] | ObjectPath, options: Mapping[str, Any] | None = None, what: str = "input"
) -> Location:
    """The place ``text`` names: an :class:`ObjectPath` for a URL (with ``options``), else a local ``Path``."""
    if isinstance(text, ObjectPath):
        return text
    if is_url(text):
        return ObjectPath.parse(os.fspath(text), options, what)
    return Path(local_text(os.fspath(text)))
