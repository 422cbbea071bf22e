"""A selected batch written whole (the one-piece path of a run on a parallel runner).

What the Prefect task ``persist-batch`` calls: it writes once, with the fingerprint
(SHA-256 and size) of the bytes it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import selection_core as sc
from selection_storage.atomic import write_atomic
from selection_storage.files import sha256_bytes


@dataclass(frozen=True)
class WrittenFile:
    """A file this run wrote, with the fingerprint of its bytes."""

    path: Path
    sha256: str
    size_bytes: int


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
