"""content-selection core: pick, per article, the extractor text that best covers what the extractors agree on."""

from __future__ import annotations

from .batch import (
    ARTICLE_SEPARATOR,
    Summary,
    apply_selections,
    dump_batch,
    envelope_parts,
    merge_summaries,
    parse_batch,
    render_articles,
    select_articles,
    select_batch_bytes,
    summarize,
)
from .config import (
    ERROR_FIELD,
    EXTRACTORS,
    FALLBACK,
    PRIORITY,
    SELECTED_KEY,
    SHINGLE_SIZE,
    TEXT_FIELDS,
    TIE_MARGIN,
)
from .errors import (
    EXIT_INVALID_INPUT,
    EXIT_IO_ERROR,
    ArticleNotFoundError,
    InvalidBatchError,
    OutputPathError,
    ReadError,
    SelectionError,
    UnsafePathError,
    WriteError,
)
from .jsonl import JSONL_SUFFIX, is_jsonl, parse_lines, render_lines
from .normalize import normalize, tokenize
from .select import Candidate, Pool, Reason, Selection, State, error_present, select_article
from .shingles import shingles

__version__ = "0.1.0"

__all__ = [
    "ARTICLE_SEPARATOR",
    "EXIT_INVALID_INPUT",
    "EXIT_IO_ERROR",
    "JSONL_SUFFIX",
    "ERROR_FIELD",
    "EXTRACTORS",
    "FALLBACK",
    "PRIORITY",
    "SELECTED_KEY",
    "SHINGLE_SIZE",
    "TEXT_FIELDS",
    "TIE_MARGIN",
    "ArticleNotFoundError",
    "Candidate",
    "InvalidBatchError",
    "OutputPathError",
    "Pool",
    "ReadError",
    "Reason",
    "Selection",
    "SelectionError",
    "State",
    "Summary",
    "UnsafePathError",
    "WriteError",
    "__version__",
    "apply_selections",
    "dump_batch",
    "envelope_parts",
    "error_present",
    "is_jsonl",
    "merge_summaries",
    "normalize",
    "parse_batch",
    "parse_lines",
    "render_articles",
    "render_lines",
    "select_article",
    "select_articles",
    "select_batch_bytes",
    "shingles",
    "summarize",
    "tokenize",
]
