"""Crawls in Common Crawl's layout made of the real pages, by ``scripts/make_crawl_fixtures.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from tests.support import ROOT


def fixture_script() -> Any:
    """``scripts/make_crawl_fixtures.py`` as a module (its ``write_crawl`` writes a crawl of real pages)."""
    name = "make_crawl_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "make_crawl_fixtures.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def write_crawl(folder: Path, warcs: int, pages: int) -> list[str]:
    """``warcs`` WARCs of ``pages`` real pages each under ``folder``; their keys (the lines of its listing)."""
    keys: list[str] = fixture_script().write_crawl(folder, warcs, pages)
    return keys
