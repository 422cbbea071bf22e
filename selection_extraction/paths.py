"""Where an extraction reads and writes: the default batch beside the input, and the checked paths of a run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from selection_core.jsonl import JSONL_SUFFIX, is_jsonl
from selection_extraction.pages import InvalidPagesError, check_page_listing, page_stem
from selection_extraction.warc import warc_stem
from selection_storage.paths import (
    DATA_ROOT_PARAMETER,
    EXTRACTED_SUFFIX,
    RunPaths,
    configured_data_root,
    data_root_in_force,
    resolve_output_path,
    resolve_run_paths,
)
from selection_storage.stores import is_url


def extracted_path(source: str | os.PathLike[str]) -> Path:
    """``<name>_extracted.json`` beside the input (a directory, a manifest, a page or a WARC file)."""
    path = Path(source)
    if not path.name or path.name in (".", ".."):
        path = path.resolve()
    if path.is_dir() or not path.suffix:
        stem = path.name
    else:
        stem = page_stem(path.name) or warc_stem(path.name) or path.stem
    return path.with_name(f"{stem}{EXTRACTED_SUFFIX}")


#: What the record of a JSON Lines batch is named with, in place of the batch's ``.jsonl``.
RECORD_SUFFIX: Final[str] = ".extraction.json"


def record_path(batch: str | os.PathLike[str]) -> Path | None:
    """Where the record of how a JSON Lines batch was made is written; None for a JSON batch, whose root holds it."""
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


def refuse_objects(*paths: str | None) -> None:
    """An ``InvalidPagesError`` for the first path that names an object in a store: the extract step reads and
    writes this machine's files only (the selection reads and writes objects)."""
    for path in paths:
        if path and is_url(path):
            raise InvalidPagesError(
                f"{path}: is in object storage, and the extract step reads and writes this machine's files only; "
                "copy the pages to a local folder (only the selection reads and writes objects)"
            )


def resolve_extract_paths(
    pages: str,
    output_path: str | None = None,
    data_root: str | None = None,
    option: str = DATA_ROOT_PARAMETER,
    output_option: str = "--output",
) -> ExtractPaths:
    """Resolve the pages input and the batch output (None: beside the input) and its record, confined to the data
    root when one is set (None: ``$CONTENT_SELECTION_DATA_ROOT``); ``option`` and ``output_option`` name
    ``data_root`` and ``output_path`` in messages.

    Raises:
        UnsafePathError: a path leaves the data root.
        OutputPathError: the output is refused by the core (a directory, the input, not writable).
        InvalidPagesError: a path is an object in a store.
    """
    refuse_objects(pages, output_path, configured_data_root(data_root))
    root = data_root_in_force(data_root, option)
    if root is None:
        source = Path(pages).expanduser().absolute()
        wanted = Path(output_path).expanduser().absolute() if output_path else extracted_path(source)
        return ExtractPaths(source, check_batch_paths(source, wanted, output_option), None)
    source = root.confine(pages, "pages")
    wanted = root.confine(output_path or extracted_path(source), "output")
    return ExtractPaths(source, check_batch_paths(source, wanted, output_option), root.path)


def check_batch_paths(source: Path, batch: Path, option: str = "--output") -> Path:
    """The checked path of an extracted batch, its record checked too; OutputPathError when one is refused."""
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
    """Every path of an extract-then-select run and the pages input's listing, checked as the flow
    ``extract-and-select`` checks them, without reading a page.

    Raises:
        InvalidPagesError: the pages input does not exist.
        UnsafePathError: a path leaves the data root.
        OutputPathError: an output is refused.
    """
    extract = resolve_extract_paths(pages, extracted_path, data_root, option, "--extracted")
    check_page_listing(pages if extract.data_root is None else extract.pages)  # named as the user wrote it
    return extract, resolve_run_paths(str(extract.output), output_path, report_path, data_root, option=option)
