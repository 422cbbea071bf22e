"""``memory://``: fsspec's in-memory store (tests and examples)."""

from __future__ import annotations

from typing import Any

from selection_storage.stores.backend import Backend


class _MemoryUpload:
    """memory:// writes a file into its store when it is opened: keep the bytes here until the commit."""

    def __init__(self, fs: Any, key: str) -> None:
        self._fs, self._key, self._buffer = fs, key, bytearray()

    def write(self, data: bytes | memoryview) -> None:
        self._buffer += data

    def close(self) -> None:
        pass

    def commit(self) -> None:
        self._fs.pipe_file(self._key, bytes(self._buffer))

    def discard(self) -> None:
        self._buffer = bytearray()


class Memory(Backend):
    def upload(self, fs: Any, key: str) -> Any:
        return _MemoryUpload(fs, key)
