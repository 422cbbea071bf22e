"""One WARC of a crawl, done where it runs: read from its store, extracted, selected, its output and record written.

This module is what a crawl's workers import (a Dask worker, or a local worker process): it imports neither Prefect
nor Dask, and no page's bytes leave the worker; the coordinator gets a :class:`WarcOutcome` of counts.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from selection_core.batch import dump_batch
from selection_core.dataset import BATCH
from selection_core.errors import EXIT_INVALID_INPUT, EXIT_IO_ERROR, SelectionError
from selection_crawl.listing import record_of
from selection_engine import select_file
from selection_extraction import ExtractionSettings, extract_to_file, find_pages
from selection_extraction.pages import missing_pages
from selection_extraction.pool import allow_child_processes
from selection_storage.files import Version
from selection_storage.stores import location, store, write_atomic

#: The key of the crawl's own block in a WARC's record (beside the extraction record's keys).
CRAWL_KEY: Final[str] = "crawl"

#: The parts of an extraction record that decide its articles: the libraries (lxml parses for all three), their
#: settings, the limits.
_SETTINGS_KEYS: Final[tuple[str, ...]] = ("time_limit_seconds", "max_page_bytes", "decoding", "extractors", "lxml")


def settings_fingerprint(root: Mapping[str, Any], output_format: str = BATCH) -> str:
    """The SHA-256 of what decides a WARC's output: in its extracted batch's root, what decides its articles
    (extractor and lxml versions, their settings, the time limit, the page size limit, the decoding policy), and the
    output's format: two runs with the same fingerprint write the same bytes."""
    extraction = root["extraction"]
    decisive = {
        "extractor_versions": root["extractor_versions"],
        **{key: extraction[key] for key in _SETTINGS_KEYS},
        "output_format": output_format,
    }
    return hashlib.sha256(orjson.dumps(decisive, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True, slots=True)
class WarcJob:
    """What a worker needs to do one WARC: where it is, where its output goes (in which format), the time limit and
    the store's options (a plain, picklable value: no page, no client)."""

    source: str
    output: str
    time_limit_seconds: float
    storage_options: tuple[tuple[str, Any], ...] = ()
    output_format: str = BATCH


@dataclass(frozen=True, slots=True)
class WarcOutcome:
    """What became of one WARC: ``done`` (with its counts and the output's SHA-256 and size) or ``failed`` (with
    its one-line ``reason`` and the exit status it stands for: 65 bad input, 74 the store or the machine), and how
    many times it was sent to a worker (more than once when Dask gave up on it: its workers kept dying)."""

    state: str
    reason: str | None = None
    exit_code: int = 0
    pages: int = 0
    articles: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    sha256: str | None = None
    size: int = 0
    seconds: float = 0.0
    input_version: Version | None = None
    fingerprint: str | None = None
    sends: int = 1  # how many times the coordinator sent it to a worker in the run that did it

    @classmethod
    def failed(cls, reason: str, exit_code: int, seconds: float = 0.0) -> WarcOutcome:
        return cls("failed", reason, exit_code if exit_code == EXIT_INVALID_INPUT else EXIT_IO_ERROR, seconds=seconds)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> WarcOutcome:
        """The outcome a WARC's record tells (the output it names was written, then the record)."""
        crawl = record[CRAWL_KEY]
        extraction = record["extraction"]
        version = crawl["input_version"]
        return cls(
            "done",
            pages=int(extraction["pages"]),
            articles=int(crawl["articles"]),
            errors=dict(extraction["errors"]),
            sha256=crawl["output"]["sha256"],
            size=int(crawl["output"]["size"]),
            input_version=Version(int(version["size"]), str(version["tag"])),
            fingerprint=crawl["settings_fingerprint"],
        )


def crawl_warc(job: WarcJob) -> WarcOutcome:
    """Do one WARC: extract its pages (one extractor process, kept for the next WARC, each call under the time
    limit) into a temporary file on this machine, select them into the output (atomic), then write the record
    beside it (atomic; the record is what says the output is done). Never raises for a bad WARC or a failing store:
    the outcome says so. The record has no time in it: a WARC done twice gets the same bytes twice."""
    started = time.perf_counter()
    options = dict(job.storage_options)
    try:
        source = location(job.source, options)
        target = location(job.output, options, "output")
        version = store(source).listed_version()
        if version is None:
            raise missing_pages(job.source, store(source).folder_noun)
        if isinstance(target, Path):  # a folder of the prefix, made on this machine's disk
            target.parent.mkdir(parents=True, exist_ok=True)
        settings = ExtractionSettings(time_limit_seconds=job.time_limit_seconds, workers=1, keep_workers=True)
        with tempfile.TemporaryDirectory(prefix="content-selection-crawl-") as folder:
            with allow_child_processes():
                page_set = find_pages(source, label=job.source)
                run = extract_to_file(source, Path(folder) / "extracted.jsonl", settings, page_set=page_set)
            selected = select_file(Path(folder) / "extracted.jsonl", target, output_format=job.output_format)
        seconds = round(time.perf_counter() - started, 3)
        root = run.result.doc
        fingerprint = settings_fingerprint(root, job.output_format)
        crawl = {
            "format": job.output_format,
            "input_version": {"size": version.size, "tag": version.tag},
            "settings_fingerprint": fingerprint,
            "articles": selected.summary.articles,
            "output": {"sha256": selected.output_sha256, "size": selected.output_size},
        }
        write_atomic(record_of(target), dump_batch({**root, CRAWL_KEY: crawl}))
    except SelectionError as exc:  # first: a store's read and write errors are OSErrors too
        return WarcOutcome.failed(str(exc), exc.exit_code, round(time.perf_counter() - started, 3))
    except OSError as exc:  # the folder of the output could not be made
        return WarcOutcome.failed(f"{job.output}: {exc.strerror or exc}", EXIT_IO_ERROR)
    return WarcOutcome(
        "done",
        pages=run.result.stats.pages,
        articles=selected.summary.articles,
        errors=dict(run.result.stats.errors),
        sha256=selected.output_sha256,
        size=selected.output_size,
        seconds=seconds,
        input_version=version,
        fingerprint=fingerprint,
    )
