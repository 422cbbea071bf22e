"""The pins of the library code that the lean extraction paths rely on (``tests/data/extractor_sources.json``).

``scripts/pin_extractor_sources.py`` writes the pins with :func:`pins`;
``tests/extraction/test_adapters.py`` compares them with the installed libraries.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import inspect
from typing import Any, Final

from tests.support import DATA

#: The library code (``module:qualified name``) that ``selection_extraction.adapters``' lean paths and tie fix
#: reproduce or reorder, by distribution.
RELIED_ON: Final[dict[str, tuple[str, ...]]] = {
    "newspaper4k": (
        "newspaper:article",
        "newspaper.article:Article.__init__",
        "newspaper.article:Article.download",
        "newspaper.article:Article.parse",
        "newspaper.extractors.content_extractor:ContentExtractor.__init__",
        "newspaper.extractors.content_extractor:ContentExtractor.calculate_best_node",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.parse",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.calculate_best_node",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.compute_gravity_scores",
        "newspaper.extractors.articlebody_extractor:ArticleBodyExtractor.nodes_to_check",
    ),
    "readability-lxml": (
        "readability.readability:Document.__init__",
        "readability.readability:Document._html",
        "readability.readability:Document.title",
        "readability.readability:Document.summary",
        "readability.htmls:get_title",
    ),
}

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
