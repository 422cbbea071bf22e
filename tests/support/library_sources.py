"""The pins of the library code that the lean extraction paths rely on (``tests/data/extractor_sources.json``).

``scripts/pin_extractor_sources.py`` writes the pins with :func:`pins`;
``tests/extraction/test_adapters.py`` compares them with the installed libraries.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import inspect
from typing import Any

from selection_extraction.adapters import RELIED_ON
from tests.support import DATA

#: The committed pins.
PINS_PATH = DATA / "extractor_sources.json"


def resolve(name: str) -> Any:
    """The object named ``module:Qualified.name``.

    >>> resolve("os.path:join").__name__
    'join'
    """
    module, _, qualname = name.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def source_digest(name: str) -> str:
    """SHA-256 of the source of the function named ``name`` (``module:Qualified.name``)."""
    return hashlib.sha256(inspect.getsource(resolve(name)).encode("utf-8")).hexdigest()


def pins() -> dict[str, Any]:
    """For each distribution of ``RELIED_ON``: its installed version and the digest of each relied-on function."""
    return {
        distribution: {
            "version": importlib.metadata.version(distribution),
            "sources": {name: source_digest(name) for name in names},
        }
        for distribution, names in RELIED_ON.items()
    }
