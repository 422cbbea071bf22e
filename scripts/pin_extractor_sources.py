#!/usr/bin/env python3
"""Pin the source of the library code that the lean extraction paths rely on.

    python scripts/pin_extractor_sources.py

Writes ``tests/data/extractor_sources.json``: for each distribution of
``selection_extraction.adapters.RELIED_ON``, its installed version and the SHA-256 of
the source of every function named there. ``tests/extraction/test_adapters.py`` fails
when the installed libraries differ from the pins. Before regenerating after an
upgrade, read what changed in those functions and check that the lean paths
(``parse_text_and_title``, ``FirstParseTitleDocument``) and the tie fix
(``TieOrderBodyExtractor``, ``TIE_FIXES``) still do what the library does; the
differential tests over every real page must pass with the new release.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import inspect
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from selection_extraction.adapters import RELIED_ON  # noqa: E402

TARGET = ROOT / "tests" / "data" / "extractor_sources.json"


def resolve(name: str) -> Any:
    """The object named ``module:Qualified.name``."""
    module, _, qualname = name.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def source_digest(dotted: str) -> str:
    """SHA-256 of the source of the function named ``dotted``."""
    return hashlib.sha256(inspect.getsource(resolve(dotted)).encode("utf-8")).hexdigest()


def pins() -> dict[str, Any]:
    return {
        distribution: {
            "version": importlib.metadata.version(distribution),
            "sources": {name: source_digest(name) for name in names},
        }
        for distribution, names in RELIED_ON.items()
    }


def main() -> int:
    TARGET.write_text(json.dumps(pins(), indent=2) + "\n", encoding="utf-8")
    print(f"{TARGET}: {sum(len(v) for v in RELIED_ON.values())} functions pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
