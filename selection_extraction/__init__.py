"""The extraction engine of content-selection, free of Prefect.

Bottom up: :mod:`~selection_extraction.options` (how the extractors are called),
:mod:`~selection_extraction.settings` (how a run extracts),
:mod:`~selection_extraction.warc` (the HTML responses of web archives),
:mod:`~selection_extraction.pages` (finding and reading pages, WARC records included),
:mod:`~selection_extraction.decode` (bytes to the one string every extractor gets),
:mod:`~selection_extraction.pool` (the killable worker pool),
:mod:`~selection_extraction.adapters` (the only module that imports trafilatura,
newspaper4k and readability; run by the workers),
:mod:`~selection_extraction.extractors` (the extractors as the engine names them),
:mod:`~selection_extraction.paths` (where a run reads and writes),
:mod:`~selection_extraction.batch` (articles, the batch document, its counts, writing it),
:mod:`~selection_extraction.engine` (a run over the pool: :func:`extract_pages`, :func:`extract_to_file`,
:func:`extract_to_spool`),
:mod:`~selection_extraction.chunks` (a run cut into chunks of pages) and
:mod:`~selection_extraction.artifacts` (what the Prefect artifacts say).

The names below are the package's public API, for the tasks, the flows and the command line.
Importing the package imports none of the extractor libraries.
"""

from selection_extraction.batch import ArticleSpool, ExtractionResult, ExtractionStats
from selection_extraction.engine import ExtractRunResult, extract_pages, extract_to_file, extract_to_spool
from selection_extraction.extractors import Extractor, ExtractorsUnavailableError, default_extractors
from selection_extraction.pages import InvalidPagesError, Page, PageSet, find_pages
from selection_extraction.paths import (
    ExtractPaths,
    check_pipeline_paths,
    extracted_path,
    record_path,
    resolve_extract_paths,
)
from selection_extraction.pool import stop_kept_workers
from selection_extraction.settings import DEFAULT_TIME_LIMIT_SECONDS, ExtractionSettings

__all__ = [
    "DEFAULT_TIME_LIMIT_SECONDS",
    "ArticleSpool",
    "ExtractPaths",
    "ExtractRunResult",
    "ExtractionResult",
    "ExtractionSettings",
    "ExtractionStats",
    "Extractor",
    "ExtractorsUnavailableError",
    "InvalidPagesError",
    "Page",
    "PageSet",
    "check_pipeline_paths",
    "default_extractors",
    "extract_pages",
    "extract_to_file",
    "extract_to_spool",
    "extracted_path",
    "record_path",
    "find_pages",
    "resolve_extract_paths",
    "stop_kept_workers",
]
