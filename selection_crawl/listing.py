"""A crawl's listing: its web archives, each with the path of its output under the job's prefix.

A listing is a text file of WARCs, one per line (Common Crawl's ``warc.paths.gz``: gzip when its name ends in
``.gz``; a file or an object), each an absolute URL or path, or a key relative to the base; or a folder (a prefix),
whose WARCs are taken in name order.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from selection_core.dataset import BATCH, DATASET
from selection_core.errors import InvalidBatchError
from selection_core.jsonl import JSONL_SUFFIX
from selection_extraction.paths import RECORD_SUFFIX
from selection_extraction.warc import warc_stem
from selection_storage.paths import PARQUET_SUFFIX
from selection_storage.stores import Location, is_url, location, store

#: The summary of a job, directly under its output prefix.
SUMMARY_NAME: Final[str] = "crawl.json"


class CrawlListingError(InvalidBatchError):
    """A listing that cannot be used: missing, not text, a relative line without a base, two lines for one output."""


@dataclass(frozen=True, slots=True)
class ListedWarc:
    """One WARC of a job: where it is (``source``, as the articles' ``path`` names it) and its output's path under
    the prefix (``relative``)."""

    source: str
    relative: str


#: The name ending of a WARC's output, per output format.
OUTPUT_SUFFIXES: Final[dict[str, str]] = {BATCH: JSONL_SUFFIX, DATASET: PARQUET_SUFFIX}


def output_name(relative: str, output_format: str = BATCH) -> str:
    """The output of a WARC at ``relative``: its ``.warc.gz`` or ``.warc`` replaced by ``.jsonl`` (the selected
    batch) or ``.parquet`` (the dataset)."""
    return (warc_stem(relative) or relative) + OUTPUT_SUFFIXES[output_format]


#: What a WARC's record is named after, in place of its output's ending, per output format: each format has its
#: own (the two outputs of one WARC can be beside each other, each with the record that says it is done).
RECORD_SUFFIXES: Final[dict[str, str]] = {BATCH: RECORD_SUFFIX, DATASET: ".dataset" + RECORD_SUFFIX}


def record_of(output: Location) -> Location:
    """The record beside a WARC's output: its ``.jsonl`` replaced by ``.extraction.json``, or its ``.parquet`` by
    ``.dataset.extraction.json``."""
    for output_format, suffix in OUTPUT_SUFFIXES.items():
        if output.name.endswith(suffix):
            return output.with_name(output.name[: -len(suffix)] + RECORD_SUFFIXES[output_format])
    return output.with_name(output.name + RECORD_SUFFIX)


def joined(base: str, key: str) -> str:
    """``key`` under ``base`` (a URL's prefix or a folder), one ``/`` between them."""
    return base.rstrip("/") + "/" + key.lstrip("/")


def _relative_of(absolute: str, base: str | None) -> str:
    """An absolute line's path under ``base`` when it is there, else the line without its scheme."""
    if base is not None and absolute.startswith(base.rstrip("/") + "/"):
        return absolute[len(base.rstrip("/")) + 1 :]
    return absolute.split("://", 1)[-1].lstrip("/")


def _text_lines(where: Location) -> Iterator[str]:
    """The lines of a text file (gunzipped when its name ends in ``.gz``), read as a stream."""
    raw = store(where).open()
    try:
        binary: Any = gzip.GzipFile(fileobj=raw, mode="rb") if where.name.lower().endswith(".gz") else raw
        for line in io.TextIOWrapper(binary, encoding="utf-8", newline=None):
            yield line.rstrip("\n")
    except UnicodeDecodeError:
        raise CrawlListingError(f"{where}: not UTF-8 text; give a text file of WARCs, one per line") from None
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise CrawlListingError(
            f"{where}: not a complete gzip file; a listing named .gz is gunzipped (give a text file, one WARC per line)"
        ) from None
    finally:
        raw.close()


def read_listing(
    listing: str,
    base: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
    output_format: str = BATCH,
) -> list[ListedWarc]:
    """The WARCs of ``listing`` (a text file of WARCs, or a folder), in its order, each with its output's path (in
    ``output_format``: :func:`output_name`).

    Raises:
        CrawlListingError: the listing is missing or unreadable, a line is relative and no ``base`` is given, or two
            lines would write the same output; nothing has run yet.
    """
    where = location(listing, storage_options, "listing")
    kind = store(where).kind()
    if kind is None:
        raise CrawlListingError(
            f"{listing}: no such file or folder; give a text file of WARCs (such as Common Crawl's warc.paths.gz) "
            "or a folder of .warc/.warc.gz files"
        )
    if kind == "folder":
        warcs = [
            ListedWarc(str(entry.where), output_name(entry.relative, output_format))
            for entry in store(where).files()
            if warc_stem(entry.relative) is not None
        ]
        if not warcs:
            raise CrawlListingError(f"{listing}: no .warc or .warc.gz file under this folder")
        return warcs
    warcs = []
    seen: dict[str, int] = {}
    for number, text in enumerate(_text_lines(where), 1):
        line = text.strip()
        if not line:
            continue
        if is_url(line) or os.path.isabs(line):
            source, relative = line, _relative_of(line, base)
        elif base is None:
            raise CrawlListingError(
                f"{listing}: line {number} ({line!r}) is relative and no base was given; give --base URL "
                "(for Common Crawl's warc.paths.gz: --base https://data.commoncrawl.org/, or s3://commoncrawl/ inside "
                "AWS's us-east-1)"
            )
        else:
            source, relative = joined(base, line), line
        name = output_name(relative, output_format)
        if name in seen:
            raise CrawlListingError(
                f"{listing}: line {number} ({line!r}) has the same output as line {seen[name]} ({name}); "
                "list each WARC once"
            )
        seen[name] = number
        warcs.append(ListedWarc(source, name))
    if not warcs:
        raise CrawlListingError(f"{listing}: lists no WARC; give one WARC per line")
    return warcs
