#!/usr/bin/env python3
"""Pin the source of the library code that the lean extraction paths rely on.

    python scripts/pin_extractor_sources.py

Writes ``tests/data/extractor_sources.json``: for each distribution of
``tests.support.library_sources.RELIED_ON``, its installed version and the SHA-256 of
the source of every function named there. ``tests/extraction/test_adapters.py`` fails
when the installed libraries differ from the pins. Before regenerating after an
upgrade, read what changed in those functions and check that the lean paths
(``parse_text_and_title``, ``FirstParseTitleDocument``) and the tie fix
(``TieOrderBodyExtractor``, ``TIE_FIXES``) still do what the library does; the
differential tests over every real page must pass with the new release.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.library_sources import PINS_PATH, pins  # noqa: E402


def main() -> int:
    pinned = pins()
    PINS_PATH.write_text(json.dumps(pinned, indent=2) + "\n", encoding="utf-8")
    print(f"{PINS_PATH}: {sum(len(v['sources']) for v in pinned.values())} functions pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
