"""The extraction engine of content-selection, free of Prefect: pages in, an extracted batch out.

Importing the package imports none of the extractor libraries (only the workers do, through ``adapters``).
"""

from selection_extraction.extracted import ArticleSpool, ExtractionResult, ExtractionStats
from selection_extraction.extraction import ExtractRunResult, extract_each, extract_pages, extract_to_file
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
    "extract_each",
    "extract_pages",
    "extract_to_file",
    "extracted_path",
    "record_path",
    "find_pages",
    "resolve_extract_paths",
    "stop_kept_workers",
]
