"""Where an extraction reads and writes: the default batch beside the input, and the checked paths of a run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Final

from selection_core.dataset import BATCH
from selection_core.jsonl import JSONL_SUFFIX, is_jsonl
from selection_extraction.pages import find_pages, missing_pages, page_stem
from selection_extraction.warc import warc_stem
from selection_storage.paths import (
    DATA_ROOT_PARAMETER,
    EXTRACTED_SUFFIX,
    RunPaths,
    data_root_in_force,
    resolve_output_path,
    resolve_run_paths,
)
from selection_storage.stores import Location, beside, is_url, location, store


def extracted_path(source: str | os.PathLike[str] | Location) -> Location:
    """``<name>_extracted.json`` beside the input (a directory, a manifest, a page or a WARC file or object; a web
    server's: in the current folder)."""
    path = location(source)
    if not path.name or path.name in (".", ".."):
        path = store(path).resolve()
    if not path.suffix or store(path).kind() == "folder":
        stem = path.name
    else:
        stem = page_stem(path.name) or warc_stem(path.name) or path.stem
    return beside(path, f"{stem}{EXTRACTED_SUFFIX}")


#: What the record of a JSON Lines batch is named with, in place of the batch's ``.jsonl``.
RECORD_SUFFIX: Final[str] = ".extraction.json"


def record_path(batch: str | os.PathLike[str] | Location) -> Location | None:
    """Where the record of how a JSON Lines batch was made is written; None for a JSON batch, whose root holds it."""
    path = location(batch)
    if not is_jsonl(path.name):
        return None
    return path.with_name(path.name[: -len(JSONL_SUFFIX)] + RECORD_SUFFIX)


@dataclass(frozen=True)
class ExtractPaths:
    """The resolved, checked paths of an extraction run."""

    pages: Location
    output: Location
    data_root: Location | None


def resolve_extract_paths(
    pages: str,
    output_path: str | None = None,
    data_root: str | None = None,
    option: str = DATA_ROOT_PARAMETER,
    output_option: str = "--output",
    storage_options: dict[str, Any] | None = None,
) -> ExtractPaths:
    """Resolve the pages input and the batch output (None: beside the input) and its record, confined to the data
    root when one is set (None: ``$CONTENT_SELECTION_DATA_ROOT``); ``option`` and ``output_option`` name
    ``data_root`` and ``output_path`` in messages. Each may be an object's URL.

    Raises:
        InvalidPagesError: the pages do not exist (checked before the output's folder).
        UnsafePathError: a path leaves the data root.
        OutputPathError: the output is refused by the core (a directory, the input, not writable).
    """
    root = data_root_in_force(data_root, option, storage_options)
    if root is None:
        given = location(pages, storage_options, "pages")
        _check_pages_exist(given, pages)  # named before the output's folder
        source = store(given).absolute()
        wanted = store(location(output_path, storage_options, "output")).absolute() if output_path else None
        return ExtractPaths(source, check_batch_paths(source, wanted or extracted_path(source), output_option), None)
    source = root.confine(pages, "pages")
    _check_pages_exist(source, str(source))
    wanted = root.confine(output_path or extracted_path(source), "output")
    return ExtractPaths(source, check_batch_paths(source, wanted, output_option), root.path)


def _check_pages_exist(source: Location, name: str) -> None:
    if not is_url(source):
        try:
            os.stat(os.path.expanduser(source))
        except FileNotFoundError:
            raise missing_pages(name) from None
        except OSError:  # said when the pages are listed
            pass


def check_batch_paths(source: Location, batch: Location, option: str = "--output") -> Location:
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
    storage_options: dict[str, Any] | None = None,
    output_format: str = BATCH,
) -> tuple[ExtractPaths, RunPaths]:
    """Every path of an extract-then-select run and the pages input's listing, checked as the flow
    ``extract-and-select`` checks them, without reading a page (a web archive's first bytes only).

    Raises:
        InvalidPagesError: the pages input does not exist.
        UnsafePathError: a path leaves the data root.
        OutputPathError: an output is refused.
    """
    extract = resolve_extract_paths(pages, extracted_path, data_root, option, "--extracted", storage_options)
    listed = extract.pages if extract.data_root is not None or is_url(extract.pages) else pages
    find_pages(listed)  # a local path named as the user wrote it; a web archive's first bytes only
    output = str(extract.output)
    return extract, resolve_run_paths(
        output, output_path, report_path, data_root, False, option, storage_options, False, output_format
    )
