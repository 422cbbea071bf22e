"""Helpers shared by the tests, imported as a package (``from tests.support import ...``).

The places every test finds its data from, whatever folder it lives in.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

#: The repository root.
ROOT = Path(__file__).resolve().parents[2]

#: The committed fixtures (see ``tests/data/README.md``).
DATA = ROOT / "tests" / "data"

#: The real pages of the extraction tests.
PAGES = DATA / "pages"

#: Every page of the ScrapingHub benchmark (181), for the tests that need all the real pages.
AEB_PAGES = DATA / "aeb-pages"

#: The project's packages, bottom layer first: each folder of the repository and the name it is
#: imported as (the generic folders install under the project's name; see pyproject.toml).
PACKAGES = {
    "selection_core": "selection_core",
    "selection_storage": "selection_storage",
    "selection_engine": "selection_engine",
    "selection_extraction": "selection_extraction",
    "selection_crawl": "selection_crawl",
    "content_selection/shell": "content_selection.shell",
    "tasks": "content_selection.tasks",
    "flows": "content_selection.flows",
    "deployments": "content_selection.deployments",
    "content_selection": "content_selection",
    "selection_cli": "selection_cli",
}


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as the module ``name`` (as a script there imports its siblings)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def examples(n: int) -> int:
    """``n`` Hypothesis examples under the full profile (the default, and ``.ci/run``'s), a tenth of them in the
    quick loop (``--hypothesis-profile=quick``, see tests/conftest.py)."""
    from hypothesis import settings

    return max(1, n * settings.default.max_examples // FULL_EXAMPLES)


#: The default ``max_examples`` of the full Hypothesis profile.
FULL_EXAMPLES = 100


def sha256_file(path: str | Path) -> str:
    """The SHA-256 (hex) of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
