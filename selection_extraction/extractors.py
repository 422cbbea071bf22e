"""The three extractors as the engine sees them: where each text goes, which function computes it
(named by reference into :mod:`selection_extraction.adapters`), and how each is described in a batch.

The adapters module is named here once (:data:`ADAPTERS_MODULE`), as a string: the
calling process looks the libraries up but never imports them; only the workers'
fork server does (:data:`WORKER_PRELOAD`). :func:`function_refs` lists every
reference the engine hands to the workers, so that a test can check they resolve.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from selection_core.config import EXTRACTORS, TEXT_FIELDS
from selection_core.errors import EXIT_INTERNAL, SelectionError
from selection_extraction.options import (
    NEWSPAPER_CALL,
    NEWSPAPER_CONFIG,
    NEWSPAPER_LEAN_PATH,
    NEWSPAPER_TIE_ORDER,
    READABILITY_CALL,
    READABILITY_SUMMARY_OPTIONS,
    TRAFILATURA_CALL,
    TRAFILATURA_OPTIONS,
)
from selection_extraction.pool import ExtractorFunction, FunctionRef

#: The module of the adapters (the only one that imports the extractor libraries), named, not imported.
ADAPTERS_MODULE: Final[str] = "selection_extraction.adapters"

#: Modules the workers' fork server imports once.
WORKER_PRELOAD: Final[tuple[str, ...]] = (ADAPTERS_MODULE,)

#: What every worker runs once before its first page: offline ``tldextract``
#: (:func:`selection_extraction.adapters.prepare_worker`).
WORKER_INITIALIZER: Final[FunctionRef] = FunctionRef(ADAPTERS_MODULE, "prepare_worker")

#: The top-level modules of the extractor libraries, looked up (not imported) before a run.
EXTRACTOR_LIBRARY_MODULES: Final[tuple[str, ...]] = (
    "trafilatura",
    "newspaper",
    "readability",
    "html_text",
    "tldextract",
)

#: What to install when the extractor libraries are missing.
INSTALL_HINT: Final[str] = "pip install 'content-selection[extract]'"


class ExtractorsUnavailableError(SelectionError):
    """The extractor libraries are not installed."""

    exit_code = EXIT_INTERNAL


@dataclass(frozen=True)
class Extractor:
    """One extractor: where its text goes, the function that computes it, and how it is described.

    Tests swap ``function`` (``dataclasses.replace``) to inject faults; the
    function must be a module-level function so that workers can import it, or a
    :class:`~selection_extraction.pool.FunctionRef` naming one (as the real ones are,
    so that only the workers import the libraries).
    """

    name: str
    function: ExtractorFunction
    distribution: str
    call: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def field(self) -> str:
        return TEXT_FIELDS[self.name]


def default_extractors() -> tuple[Extractor, ...]:
    """The three real extractors, in ``EXTRACTORS`` order.

    The functions are :class:`~selection_extraction.pool.FunctionRef` s to
    :mod:`selection_extraction.adapters`: the libraries are looked up here but imported only
    by the workers' fork server, which imports them anyway; importing them in the
    calling process too would be paid again by every process that extracts, a flow's
    or each task runner worker's, before the first page (see ``docs/performance.md``).

    Raises:
        ExtractorsUnavailableError: a library is not installed.
    """
    missing = [name for name in EXTRACTOR_LIBRARY_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ExtractorsUnavailableError(
            f"the extract step needs trafilatura, newspaper4k, readability-lxml and html-text "
            f"(no module named {', '.join(missing)}); install them with: {INSTALL_HINT}"
        )
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
                "lean_path": NEWSPAPER_LEAN_PATH,
                "tie_order": NEWSPAPER_TIE_ORDER,
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


def function_refs() -> tuple[FunctionRef, ...]:
    """Every reference the engine hands to the workers: the initializer and the real extractors' functions."""
    functions = [e.function for e in default_extractors()]
    return (WORKER_INITIALIZER, *(f for f in functions if isinstance(f, FunctionRef)))


def library_version(distribution: str) -> str:
    """The installed version of ``distribution``, or ``"not installed"``.

    >>> library_version("no-such-distribution-for-content-selection")
    'not installed'
    """
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def check_extractors(extractors: Sequence[Extractor]) -> None:
    """Refuse anything but one extractor for each name of ``EXTRACTORS``.

    Raises:
        ValueError: a name is missing or repeated.
    """
    names = [e.name for e in extractors]
    if sorted(names) != sorted(EXTRACTORS):
        raise ValueError(f"need one extractor for each of {list(EXTRACTORS)}, got {names}")
