"""A batch read and validated whole, and a selected batch written whole (the one-piece path of a run).

What the Prefect tasks ``extract-batch``, ``persist-batch`` and ``write-report``
call: each function reads or writes once, with the fingerprint (SHA-256 and size)
of the bytes it read or wrote.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import selection_core as sc
from selection_storage.atomic import write_atomic
from selection_storage.files import read_input, sha256_bytes


@dataclass(frozen=True)
class LoadedBatch:
    """A validated batch and the fingerprint of the bytes it was read from."""

    path: Path
    doc: dict[str, Any]
    sha256: str
    size_bytes: int

    @property
    def article_count(self) -> int:
        return len(self.doc["articles"])


@dataclass(frozen=True)
class WrittenFile:
    """A file this run wrote, with the fingerprint of its bytes."""

    path: Path
    sha256: str
    size_bytes: int


def load_batch(input_path: str | os.PathLike[str]) -> LoadedBatch:
    """Read the batch and validate it with the core.

    Raises:
        InvalidBatchError: missing, unreadable, not JSON or wrong shape.
        ReadError: a transient read error.
    """
    data = read_input(input_path)
    doc = sc.parse_batch(data, str(input_path))
    return LoadedBatch(path=Path(input_path), doc=doc, sha256=sha256_bytes(data), size_bytes=len(data))


def write_selected(doc: dict[str, Any], selections: list[sc.Selection], output_path: Path) -> WrittenFile:
    """Write ``doc`` with ``selected_extractor`` set in every article (updated in place), atomically.

    Applying the selections is idempotent, so writing again writes the same bytes.

    Raises:
        OutputPathError: the location is refused.
        WriteError: writing failed (``transient`` when a retry may cure it).
    """
    data = sc.dump_batch(sc.apply_selections(doc, selections))
    write_atomic(output_path, data)
    return WrittenFile(Path(output_path), sha256_bytes(data), len(data))
