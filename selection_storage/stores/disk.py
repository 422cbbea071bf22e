"""A local file or folder (:class:`DiskStore`), behind the interface of
:class:`~selection_storage.stores.protocol.Store`; ``file://`` URLs are local paths."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from selection_core.errors import InvalidBatchError, OutputPathError
from selection_storage.atomic import TMP_SUFFIX, Staged, StagedFile, remove_orphans, temporary_name, write_error
from selection_storage.files import Version, open_input, read_error, read_span
from selection_storage.stores.backend import UPLOAD_PART_BYTES
from selection_storage.stores.entries import Entry
from selection_storage.stores.protocol import Store
from selection_storage.stores.urls import Location


def _resolved(path: Path, what: str) -> Path:
    try:
        return path.resolve(strict=False)
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a symlink loop
        if what == "input":
            raise InvalidBatchError(f"{path}: symbolic link loop; point the path at a real file") from None
        raise OutputPathError(f"{path}: symbolic link loop; choose another {what}") from None


class DiskStore:
    """A local file (or folder), behind the interface of :class:`Store`."""

    options: Mapping[str, Any] = {}
    folder_noun = "directory"

    def __init__(self, path: Path) -> None:
        self.path = path

    def version(self) -> Version:
        return Version.of_file(os.stat(self.path))

    @contextlib.contextmanager
    def reading(self) -> Iterator[tuple[Version, Callable[[int], bytes]]]:
        with open_input(self.path) as fh:

            def read(n: int) -> bytes:
                try:
                    return fh.read(n)
                except OSError as exc:
                    raise read_error(self.path, exc) from None

            yield Version.of_file(os.fstat(fh.fileno())), read

    def read_span(self, version: Version, start: int, end: int, before: bytes = b"", after: bytes = b"") -> bytearray:
        return read_span(self.path, version, start, end, before, after)

    def open(self, block_size: int = UPLOAD_PART_BYTES) -> BinaryIO:
        return open(self.path, "rb")  # noqa: SIM115 - the caller closes it

    def size(self) -> int:
        return os.stat(self.path).st_size

    def stage(self, token: str | None = None) -> Staged:
        return StagedFile(self.path, temporary_name(self.path, token))

    def part(self, token: str, number: int) -> str | None:
        return str(temporary_name(self.path, token, number))

    def remove_orphans_beside(self) -> None:
        remove_orphans(self.path.parent)

    def remove(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def make_folders(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def check_output(self, source: Store, option: str) -> None:
        out = self.path
        same = isinstance(source, DiskStore) and source._is(out, _resolved(out, option))  # an object is never it
        if out.is_dir():  # first: the input may be a folder (of pages), and no folder can be written
            raise OutputPathError(f"{out}: is a directory; give a file path for the output")
        if same:
            raise OutputPathError(
                f"{out}: is the input file itself; the input is never overwritten, choose another {option}"
            )
        parent = out.parent
        if not parent.is_dir():
            raise OutputPathError(f"{out}: the directory {parent} does not exist; create it first")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputPathError(f"{out}: the directory {parent} is not writable; choose another {option}")

    def _is(self, out: Path, out_resolved: Path) -> bool:
        """Whether the file ``out`` (``out_resolved`` resolved) is this one."""
        inp, inp_resolved = self.path, _resolved(self.path, "input")
        try:
            return out_resolved == inp_resolved or (out.exists() and inp.exists() and os.path.samefile(inp, out))
        except OSError:
            return out_resolved == inp_resolved

    def kind(self) -> str | None:
        if self.path.is_dir():
            return "folder"
        return "file" if self.path.exists() else None

    def files(self) -> list[Entry]:
        root = self.path
        if not root.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not an existing directory", str(root))
        found: list[Entry] = []
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=_raise):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if not name.startswith("."):
                    file = Path(dirpath) / name
                    found.append(Entry(file.relative_to(root).as_posix(), file))
        found.sort(key=lambda entry: entry.relative)
        return found

    def children(self) -> list[Entry]:
        return [
            Entry(name, self.path / name, (self.path / name).is_dir())
            for name in sorted(os.listdir(self.path))
            if not name.startswith(".")
        ]

    def listed(self) -> dict[str, Version]:
        try:
            with os.scandir(self.path) as entries:
                return {
                    e.name: Version.of_file(e.stat())
                    for e in entries
                    if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
                }
        except (FileNotFoundError, NotADirectoryError):
            return {}

    def listed_version(self) -> Version | None:
        try:
            return Version.of_file(os.stat(self.path))
        except FileNotFoundError:
            return None

    def remove_orphans_under(
        self, stopped: Callable[[str], bool] | None = None, started_before: float | None = None
    ) -> list[Location]:
        removed: list[Location] = []
        for dirpath, dirnames, filenames in os.walk(self.path, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if any(name.endswith(TMP_SUFFIX) for name in filenames):
                removed.extend(remove_orphans(dirpath))
        return removed

    def resolve(self) -> Location:
        return self.path.resolve()

    def absolute(self) -> Location:
        return self.path.expanduser().absolute()

    def spool_folder(self) -> Path | None:
        return self.path.parent


def _raise(exc: OSError) -> None:
    raise exc
