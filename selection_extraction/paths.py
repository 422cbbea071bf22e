"""Where an extraction reads and writes: the default batch name beside the input, and the checked paths of a run.

The path policy itself (the data root, confinement, what output is refused) is
:mod:`selection_storage.paths`; this module applies it to the pages and the batch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from selection_core.jsonl import JSONL_SUFFIX, is_jsonl
from selection_extraction.pages import check_page_listing, page_stem
from selection_extraction.warc import warc_stem
from selection_storage.paths import (
    DATA_ROOT_PARAMETER,
    EXTRACTED_SUFFIX,
    RunPaths,
    data_root_in_force,
    resolve_output_path,
    resolve_run_paths,
)


def extracted_path(source: str | os.PathLike[str]) -> Path:
    """``<name>_extracted.json`` beside the input (a directory, a manifest or a page).

    >>> extracted_path("data/pages").as_posix()
    'data/pages_extracted.json'
    >>> extracted_path("data/pages.jsonl").as_posix()
    'data/pages_extracted.json'
    >>> extracted_path("crawl/CC-NEWS-1.warc.gz").as_posix()
    'crawl/CC-NEWS-1_extracted.json'
    """
    path = Path(source)
    if not path.name or path.name in (".", ".."):
        path = path.resolve()
    if path.is_dir() or not path.suffix:
        stem = path.name
    else:
        stem = page_stem(path.name) or warc_stem(path.name) or path.stem
    return path.with_name(f"{stem}{EXTRACTED_SUFFIX}")


#: What the extraction record of a JSON Lines batch is named with, in place of the batch's ``.jsonl``.
RECORD_SUFFIX: Final[str] = ".extraction.json"


def record_path(batch: str | os.PathLike[str]) -> Path | None:
    """Where the record of how a batch was made is written: beside a JSON Lines batch, which has no
    root to hold it (``<stem>.extraction.json``); None for a JSON batch, whose root holds it.

    >>> record_path("out/crawl_extracted.jsonl").as_posix(), record_path("out/crawl_extracted.json")
    ('out/crawl_extracted.extraction.json', None)
    """
    path = Path(batch)
    if not is_jsonl(path.name):
        return None
    return path.with_name(path.name[: -len(JSONL_SUFFIX)] + RECORD_SUFFIX)


@dataclass(frozen=True)
class ExtractPaths:
    """The resolved, checked paths of an extraction run."""

    pages: Path
    output: Path
    data_root: Path | None


def resolve_extract_paths(
    pages: str,
    output_path: str | None = None,
    data_root: str | None = None,
    option: str = DATA_ROOT_PARAMETER,
    output_option: str = "--output",
) -> ExtractPaths:
    """Resolve the pages input and the batch output; confine both to the data root when one is set.

    Args:
        pages: A directory of pages or a JSON Lines manifest.
        output_path: Where to write the batch; None for ``<pages>_extracted.json`` beside the input.
        data_root: Directory every path must resolve inside; None for
            ``$CONTENT_SELECTION_DATA_ROOT`` (no confinement when that is unset too).
        option: How messages name ``data_root`` (``--data-root`` on the command line).
        output_option: How messages name ``output_path`` (``--extracted`` for ``pipeline``).

    A batch named ``*.jsonl`` is written as JSON Lines, with its record beside it
    (:func:`record_path`), which is checked as the batch is.

    Raises:
        UnsafePathError: a path leaves the data root.
        OutputPathError: the output is refused by the core (a directory, the input, not writable).
    """
    root = data_root_in_force(data_root, option)
    if root is None:
        source = Path(pages).expanduser().absolute()
        wanted = Path(output_path).expanduser().absolute() if output_path else extracted_path(source)
        return ExtractPaths(source, check_batch_paths(source, wanted, output_option), None)
    source = root.confine(pages, "pages")
    wanted = root.confine(output_path or extracted_path(source), "output")
    return ExtractPaths(source, check_batch_paths(source, wanted, output_option), root.path)


def check_batch_paths(source: Path, batch: Path, option: str = "--output") -> Path:
    """Check where an extracted batch, and its record if it has one (:func:`record_path`), will go;
    the batch's path.

    Raises:
        OutputPathError: a path is refused (a directory, the input, not writable).
    """
    record = record_path(batch)
    if record is not None:
        resolve_output_path(source, record, option)
    return resolve_output_path(source, batch, option)


def check_pipeline_paths(
    pages: str,
    extracted_path: str | None = None,
    output_path: str | None = None,
    report_path: str | None = None,
    data_root: str | None = None,
    option: str = DATA_ROOT_PARAMETER,
) -> tuple[ExtractPaths, RunPaths]:
    """Every path of an extract-then-select run, checked as the flow ``extract-and-select`` checks them,
    and the pages input's listing (:func:`~selection_extraction.pages.check_page_listing`): what can be
    refused before the run starts, without reading a page.

    ``option`` is how messages name ``data_root`` (``--data-root`` on the command line).

    Raises:
        InvalidPagesError: the pages input does not exist.
        UnsafePathError: a path leaves the data root.
        OutputPathError: an output is refused.
    """
    extract = resolve_extract_paths(pages, extracted_path, data_root, option, "--extracted")
    check_page_listing(pages if extract.data_root is None else extract.pages)  # named as the user wrote it
    return extract, resolve_run_paths(str(extract.output), output_path, report_path, data_root, option=option)
