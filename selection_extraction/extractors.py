"""The three extractors as the engine sees them: how each is called and described, its function by name, and
whether an extra that a command or a step needs is installed."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from selection_core.config import EXTRACTORS
from selection_core.errors import EXIT_INTERNAL, EXTRA_OF_MODULE, SelectionError, missing_extra
from selection_extraction.pool import ExtractorFunction, FunctionRef

#: Keyword arguments of ``trafilatura.extract`` (besides the HTML).
TRAFILATURA_OPTIONS: Final[dict[str, Any]] = {"include_comments": False}

#: newspaper4k ``Config`` attributes set for every page.
NEWSPAPER_CONFIG: Final[dict[str, Any]] = {"fetch_images": False, "memorize_articles": False}

#: Keyword arguments of readability's ``Document.summary``.
READABILITY_SUMMARY_OPTIONS: Final[dict[str, Any]] = {"html_partial": True}

#: The calls, as recorded in the batch.
TRAFILATURA_CALL: Final[str] = "trafilatura.extract(html, include_comments=False)"
NEWSPAPER_CALL: Final[str] = (
    "newspaper.article(url, input_html=html, config=Config(fetch_images=False, memorize_articles=False)) "
    "text and title, by a lean Article.parse() (no authors, publish date, videos, images), "
    "ties in document order (newspaper4k #738)"
)
READABILITY_CALL: Final[str] = (
    "html_text.extract_text(Document(html).summary(html_partial=True)), "
    "title Document.title() read from summary()'s first parse of the page"
)

#: The module of the extractor functions, named, not imported (only the workers import it).
ADAPTERS_MODULE: Final[str] = "selection_extraction.adapters"

#: Modules the workers' fork server imports once.
WORKER_PRELOAD: Final[tuple[str, ...]] = (ADAPTERS_MODULE,)

#: What every worker runs once before its first page: offline ``tldextract``.
WORKER_INITIALIZER: Final[FunctionRef] = FunctionRef(ADAPTERS_MODULE, "prepare_worker")


class ExtractorsUnavailableError(SelectionError):
    """The extractor libraries are installed but a worker cannot load them (a broken install)."""

    exit_code = EXIT_INTERNAL


def require_extra(extra: str, what: str) -> None:
    """A :class:`MissingExtraError` for ``what`` (a command, a step) if a module of ``extra`` is not installed; its
    modules are looked up, not imported."""
    for module in (m for m, needed_by in EXTRA_OF_MODULE.items() if needed_by == extra):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a finder that refuses it; a module set to None
            found = False
        if not found:
            raise missing_extra(what, module)  # type: ignore[misc]


@dataclass(frozen=True)
class Extractor:
    """One extractor: its name, its function (module-level, or a :class:`~selection_extraction.pool.FunctionRef`),
    and how the batch describes it."""

    name: str
    function: ExtractorFunction
    distribution: str
    call: str
    settings: dict[str, Any] = field(default_factory=dict)


def default_extractors() -> tuple[Extractor, ...]:
    """The three real extractors, in ``EXTRACTORS`` order; their libraries are looked up, not imported.

    Raises:
        MissingExtraError: a library of the 'extract' extra is not installed.
    """
    require_extra("extract", "the extract step")
    return (
        Extractor(
            "trafilatura",
            FunctionRef(ADAPTERS_MODULE, "extract_trafilatura"),
            "trafilatura",
            TRAFILATURA_CALL,
            dict(TRAFILATURA_OPTIONS),
        ),
        Extractor(
            "newspaper4k",
            FunctionRef(ADAPTERS_MODULE, "extract_newspaper4k"),
            "newspaper4k",
            NEWSPAPER_CALL,
            {
                **NEWSPAPER_CONFIG,
                "lean_path": "parse, title, metadata (for the language), body extractor, cleaner, formatter",
                "tie_order": "candidate divs in document order, scored parents in order of first occurrence "
                "(https://github.com/AndyTheFactory/newspaper4k/pull/738), where the installed release dedupes them "
                "through set()",
                "public_suffix_list": f"tldextract {library_version('tldextract')} bundled snapshot",
            },
        ),
        Extractor(
            "readability",
            FunctionRef(ADAPTERS_MODULE, "extract_readability"),
            "readability-lxml",
            READABILITY_CALL,
            {**READABILITY_SUMMARY_OPTIONS, "html_text": library_version("html-text")},
        ),
    )


def library_version(distribution: str) -> str:
    """The installed version of ``distribution``, or ``"not installed"``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def check_extractors(extractors: Sequence[Extractor]) -> None:
    """Refuse (ValueError) anything but one extractor for each name of ``EXTRACTORS``."""
    names = [e.name for e in extractors]
    if sorted(names) != sorted(EXTRACTORS):
        raise ValueError(f"need one extractor for each of {list(EXTRACTORS)}, got {names}")
