"""Helpers shared by the tests, imported as a package (``from tests.support import ...``).

The places every test finds its data from, whatever folder it lives in.
"""

from __future__ import annotations

from pathlib import Path

#: The repository root.
ROOT = Path(__file__).resolve().parents[2]

#: The committed fixtures (see ``tests/data/README.md``).
DATA = ROOT / "tests" / "data"

#: The real pages of the extraction tests.
PAGES = DATA / "pages"

#: Every page of the ScrapingHub benchmark (181), for the tests that need all the real pages.
AEB_PAGES = DATA / "aeb-pages"

#: The project's own top-level packages, bottom layer first (what the install ships).
PACKAGES = (
    "selection_core",
    "selection_storage",
    "selection_extraction",
    "content_selection",
    "tasks",
    "flows",
    "deployments",
    "selection_cli",
)
