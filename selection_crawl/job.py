"""A crawl job's state, free of Prefect and Dask: which WARCs a run must do (resumed by content), and its summary.

A WARC is done when its output and its record are under the prefix, and the record names the WARC's current
version and this run's extractor versions and settings. ``crawl.json`` keeps what the records say, one WARC a line,
so that a re-run lists the output folders instead of reading every record.
"""

from __future__ import annotations

import functools
import posixpath
import tempfile
import time
import uuid
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import orjson

from selection_core.config import EXTRACTORS
from selection_core.dataset import BATCH, DATASET
from selection_core.errors import EXIT_INVALID_INPUT, EXIT_IO_ERROR, OutputPathError, SelectionError
from selection_crawl.commits import work_file_output
from selection_crawl.lease import CrawlLeaseLostError
from selection_crawl.listing import SUMMARY_NAME, ListedWarc, joined, read_listing, record_of
from selection_crawl.unit import (
    WarcJob,
    WarcOutcome,
    expected_fingerprint,
    read_record,
)
from selection_engine.dataset import require_dataset_extra
from selection_extraction import ExtractionSettings
from selection_storage.files import Version
from selection_storage.stores import Location, ObjectPath, listed_versions, location, store
from selection_storage.stores.conditional import VersionChangedError, remove_if, write_if

#: Folder listings kept while a resume walks the listing (Common Crawl's lists each folder's WARCs together).
_LISTINGS_KEPT: Final[int] = 8

#: The WARCs a resume looks at together: their versions asked for at once, then each decided.
_RESUMED_AT_ONCE: Final[int] = 1000

#: Least seconds between two writes of ``crawl.json`` while WARCs finish (and at least 4x the last write's time).
SUMMARY_INTERVAL_SECONDS: Final[float] = 5.0

#: How an entry of ``crawl.json`` starts: the line of one WARC.
_ENTRY_START: Final[bytes] = b'{"warc":'


class CrawlFailedError(SelectionError):
    """Some WARCs of a crawl failed; the others were done. 65 when a WARC was bad input, else 74."""


class _Listings:
    """``listed(folder)``: a folder's files and their versions, the last few folders kept."""

    def __init__(self) -> None:
        self.listed = functools.lru_cache(maxsize=_LISTINGS_KEPT)(lambda folder: store(folder).listed())
        self._work = functools.lru_cache(maxsize=_LISTINGS_KEPT)(self._work_by_output)

    def _work_by_output(self, folder: Location) -> dict[str, list[str]]:
        """The work files (commits, counts of tries) of the folder, by the output they are of: one pass a folder."""
        found: dict[str, list[str]] = {}
        for name in self.listed(folder):
            output = work_file_output(name)
            if output is not None:
                found.setdefault(output, []).append(name)
        return {output: sorted(names) for output, names in found.items()}

    def work_files(self, output: Location) -> list[str]:
        """The names of the work files left beside ``output`` (:func:`work_files`'s), from its folder's listing."""
        return self._work(output.parent).get(output.name, [])

    def version(self, where: Location) -> Version | None:
        return self.listed(where.parent).get(where.name)

    def versions(self, places: list[Location]) -> list[Version | None]:
        """Each place's version, in order: from its folder's listing, or (a web server's files) asked for together
        (:func:`listed_versions`)."""
        unlisted: dict[str, list[int]] = {}
        for number, place in enumerate(places):
            if isinstance(place, ObjectPath) and not place.backend.listable:
                unlisted.setdefault(place.protocol, []).append(number)
        found: dict[int, Version | None] = {}
        for numbers in unlisted.values():
            found |= zip(numbers, listed_versions([places[n] for n in numbers]), strict=True)
        return [found[n] if n in found else self.version(p) for n, p in enumerate(places)]


def _entry(warc: ListedWarc, outcome: WarcOutcome | None) -> dict[str, Any]:
    """One WARC's line of ``crawl.json``."""
    state = {"state": "pending"} if outcome is None else outcome.to_json()
    return {"warc": warc.source, "output": warc.relative, **state}


def _identity(outcome: WarcOutcome) -> tuple[str | None, Version | None, int]:
    """What makes an output valid: the settings fingerprint, the WARC's version, the output's size."""
    return outcome.fingerprint, outcome.input_version, outcome.size


class _Lines:
    """Each WARC's line of ``crawl.json``, in an anonymous temporary file, found by its offset: what the coordinator
    keeps of a WARC is 8 bytes (beyond its line of the listing), whatever the crawl's size."""

    def __init__(self, count: int) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed (and gone, never named) with the job
        self._at = array("q", [-1]) * count
        self._end = 0

    def put(self, index: int, line: bytes) -> None:
        self._file.seek(self._end)
        self._file.write(line + b"\n")
        self._at[index] = self._end
        self._end += len(line) + 1

    def get(self, index: int) -> bytes | None:
        if index not in self:
            return None
        self._file.seek(self._at[index])
        return self._file.readline().rstrip(b"\n")

    def __contains__(self, index: int) -> bool:
        return self._at[index] >= 0

    def drop(self, index: int) -> None:
        self._at[index] = -1


class CrawlJob:
    """The WARCs of one crawl, what became of each, and its summary ``crawl.json`` under the prefix.

    :meth:`plan` reads the listing and finds what is already done; a run then does :attr:`todo` and hands each
    outcome to :meth:`finish_warc`; :meth:`close` writes the last summary and removes what killed writers left.
    """

    def __init__(
        self,
        listing: str,
        prefix: str,
        warcs: list[ListedWarc],
        base: str | None,
        time_limit_seconds: float,
        storage_options: Mapping[str, Any] | None,
        fingerprint: str,
        output_format: str = BATCH,
    ) -> None:
        self.listing = listing
        self.prefix = prefix
        self.warcs = warcs
        self.fence: tuple[str, str] | None = None  # the lease its workers check before each write (set by its run)
        self.base = base
        self.time_limit_seconds = time_limit_seconds
        self.storage_options = dict(storage_options or {})
        self.fingerprint = fingerprint
        self.output_format = output_format
        self.run = uuid.uuid4().hex[:12]  # a WARC's tries are counted per run
        self._lines = _Lines(len(warcs))
        self._shared: dict[Any, Any] = {fingerprint: fingerprint}
        self._failed: list[int] = []
        self._counts: dict[str, Any] = {"done": 0, "pages": 0, "articles": 0, "seconds": 0.0, "retried": 0}
        self._errors = dict.fromkeys(EXTRACTORS, 0)
        self.done_before = 0  # WARCs whose output was valid when the job was planned
        self.todo: list[int] = []
        self._written_at = float("-inf")
        self._write_seconds = 0.0
        self._summary_version: Version | None = None  # of crawl.json, as this run last read or wrote it
        self._leftovers: list[tuple[Location, Version]] = []  # work files of done WARCs, as listed by the plan

    @classmethod
    def plan(
        cls,
        listing: str,
        prefix: str,
        base: str | None = None,
        time_limit_seconds: float = ExtractionSettings.time_limit_seconds,
        storage_options: Mapping[str, Any] | None = None,
        output_format: str = BATCH,
        held: Callable[[], None] | None = None,
    ) -> CrawlJob:
        """The job of ``listing`` into ``prefix``, its done WARCs found (refusals before anything runs); its outputs
        are selected batches, or with ``output_format`` ``"dataset"`` Parquet datasets (pyarrow is checked here,
        not by every WARC). ``held()`` (the run's lease renewed: raising once it is lost) is called once all is
        read, before the work files that killed workers left beside done outputs are removed, each only while it is
        the version listed: what the plan read was read while the run held the prefix, and a run frozen in its plan
        removes nothing another run wrote since."""
        if output_format == DATASET:
            require_dataset_extra()
        where = location(prefix, storage_options, "output")  # a bad URL is refused here
        warcs = read_listing(listing, base, storage_options, output_format)
        try:
            store(where).make_folders()  # a folder on this disk, made as the outputs' folders are
        except OSError as exc:
            raise OutputPathError(f"{prefix}: cannot make this folder ({exc.strerror}); choose another") from None
        fingerprint = expected_fingerprint(time_limit_seconds, output_format)
        job = cls(listing, prefix, warcs, base, time_limit_seconds, storage_options, fingerprint, output_format)
        job._resume()
        if held is not None:
            held()
        for where, version in job._leftovers:
            remove_if(where, version)
        job._leftovers = []
        return job

    def where(self, relative: str) -> Location:
        return location(joined(self.prefix, relative), self.storage_options, "output")

    def warc_job(self, index: int) -> WarcJob:
        """What a worker needs to do WARC ``index``."""
        warc = self.warcs[index]
        return WarcJob(
            warc.source,
            str(self.where(warc.relative)),
            self.time_limit_seconds,
            self.fingerprint,
            self.run,
            index,
            tuple(sorted(self.storage_options.items())),
            self.output_format,
            self.fence,
        )

    def outcome(self, index: int) -> WarcOutcome | None:
        """What became of WARC ``index`` (None: pending)."""
        line = self._lines.get(index)
        return None if line is None else WarcOutcome.from_json(orjson.loads(line), self._shared)

    def _keep(self, index: int, outcome: WarcOutcome) -> None:
        self._lines.put(index, orjson.dumps(_entry(self.warcs[index], outcome)))
        self._counts["seconds"] += outcome.seconds
        if outcome.state == "failed":
            self._failed.append(index)
            return
        self._counts["done"] += 1
        self._counts["pages"] += outcome.pages
        self._counts["articles"] += outcome.articles
        for name in EXTRACTORS:
            self._errors[name] += outcome.errors.get(name, 0)

    def _previous(self) -> None:
        """Take the ``done`` lines of the last ``crawl.json`` (if there is one, and it is ours), each as its WARC's;
        its version is the one the next write of ``crawl.json`` replaces."""
        summary = self.where(SUMMARY_NAME)
        self._summary_version = store(summary).listed_version()  # before it is read: a later write changes it
        if self._summary_version is None:
            return
        index_of = {warc.relative: index for index, warc in enumerate(self.warcs)}
        with store(summary).open() as fh:
            for line in fh:
                if not line.startswith(_ENTRY_START):
                    continue
                try:
                    entry = orjson.loads(line.rstrip().rstrip(b","))
                    index = index_of.get(entry["output"])
                    if index is not None and entry["warc"] == self.warcs[index].source:
                        if entry["state"] == "done" and WarcOutcome.from_json(entry, self._shared):  # all its keys
                            self._lines.put(index, orjson.dumps(entry))
                except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    continue  # a line we cannot trust: the record is read instead

    def _resume(self) -> None:
        """Find the WARCs whose output is valid: listed with its record, the record (or ``crawl.json``'s copy of it)
        naming this WARC at its current version and this run's settings, and the listed output's size. The WARCs
        are looked at :data:`_RESUMED_AT_ONCE` at a time, the versions of those with an output asked for together."""
        self._previous()
        inputs, outputs = _Listings(), _Listings()
        for begin in range(0, len(self.warcs), _RESUMED_AT_ONCE):
            indices = range(begin, min(begin + _RESUMED_AT_ONCE, len(self.warcs)))
            listed = {}
            for index in indices:
                output = self.where(self.warcs[index].relative)
                found = outputs.version(output)
                if found is not None and outputs.version(record_of(output)) is not None:
                    listed[index] = found
            sources = [location(self.warcs[index].source, self.storage_options) for index in listed]
            current = dict(zip(listed, inputs.versions(sources), strict=True))
            for index in indices:
                self._resume_one(index, listed.get(index), current.get(index), outputs)

    def _resume_one(self, index: int, listed: Version | None, current: Version | None, outputs: _Listings) -> None:
        """Keep WARC ``index`` as done, or put it in :attr:`todo`: ``listed`` is its output's version (None: no
        output, or no record), ``current`` its WARC's."""
        warc = self.warcs[index]
        outcome = self.outcome(index)
        self._lines.drop(index)
        if listed is None or current is None:
            self.todo.append(index)
            return
        output = self.where(warc.relative)
        wanted = (self.fingerprint, current, listed.size)
        if outcome is None or _identity(outcome) != wanted:
            outcome = read_record(record_of(output), warc.source)
        if outcome is not None and _identity(outcome) == wanted:
            self._keep(index, outcome)
            self.done_before += 1
            for name in outputs.work_files(output):  # its worker died as it ended: removed once the lease is checked
                version = outputs.version(output.with_name(name))
                if version is not None:
                    self._leftovers.append((output.with_name(name), version))
        else:
            self.todo.append(index)

    def finish_warc(self, index: int, outcome: WarcOutcome) -> None:
        """Keep what became of WARC ``index``; ``crawl.json`` is replaced when the last write is old enough."""
        self._keep(index, outcome)
        self._counts["retried"] += outcome.tries - 1
        now = time.monotonic()
        if now - self._written_at >= max(SUMMARY_INTERVAL_SECONDS, 4 * self._write_seconds):
            self.write_summary()

    def totals(self) -> dict[str, Any]:
        done, failed = self._counts["done"], len(self._failed)
        return {
            "warcs": len(self.warcs),
            "done": done,
            "failed": failed,
            "pending": len(self.warcs) - done - failed,
            "done_before": self.done_before,
            "retried": self._counts["retried"],
            "pages": self._counts["pages"],
            "articles": self._counts["articles"],
            "errors": dict(self._errors),
            "seconds": round(self._counts["seconds"], 3),
        }

    def _summary_lines(self) -> Iterator[bytes]:
        head = {
            "run": self.run,  # each run's writes differ: a store's tag of the bytes (S3's ETag) tells two runs apart
            "listing": self.listing,
            "base": self.base,
            "output_prefix": self.prefix,
            "format": self.output_format,
            "settings_fingerprint": self.fingerprint,
            "totals": self.totals(),
        }
        yield orjson.dumps(head)[:-1] + b',\n"warcs": [\n'
        for index, warc in enumerate(self.warcs):
            line = self._lines.get(index)
            yield (b",\n" if index else b"") + (orjson.dumps(_entry(warc, None)) if line is None else line)
        yield b"\n]}\n"

    def write_summary(self) -> None:
        """Replace ``crawl.json`` atomically (the totals, then one line per WARC in the listing's order), only over
        the version this run last read or wrote: a coordinator that lost the prefix's lease, even one frozen
        between a check of its lease and this write, never overwrites the next holder's.

        Raises:
            CrawlLeaseLostError: another run wrote (or removed) ``crawl.json`` since; nothing was written.
        """
        started = time.monotonic()
        summary = self.where(SUMMARY_NAME)
        try:
            self._summary_version = write_if(summary, self._summary_lines(), self._summary_version)
        except VersionChangedError:
            raise CrawlLeaseLostError(
                f"{summary}: another run has written it since this one last did; the prefix is not this run's any "
                "more: stop this one"
            ) from None
        self._written_at = time.monotonic()
        self._write_seconds = self._written_at - started

    def close(self, held_at: float | None = None) -> None:
        """Write the summary, and remove what killed writers left under the prefix: the unfinished uploads of
        ``crawl.json`` and of the files of the WARCs that have an outcome, started before ``held_at`` (the store's
        time at which this run last held the prefix's lease: no writer of this run is at them, and no later run's
        upload is taken, whenever this runs; None: no lease, this run is alone on the prefix), others only when
        over an hour old (a WARC still running after a stop, a nested prefix's crawl).

        Raises:
            CrawlLeaseLostError: another run has written ``crawl.json`` since this one last did; nothing is swept.
        """
        self.write_summary()
        ended = {SUMMARY_NAME}
        for index, warc in enumerate(self.warcs):
            if index in self._lines:
                folder = posixpath.dirname(warc.relative)
                ended |= {warc.relative, posixpath.join(folder, record_of(self.where(warc.relative)).name)}

        def stopped(relative: str) -> bool:  # a commit's or the tries' is its output's
            folder, name = posixpath.split(relative)
            return posixpath.join(folder, work_file_output(name) or name) in ended

        prefix = store(location(self.prefix, self.storage_options, "output"))
        prefix.remove_orphans_under(stopped=stopped, started_before=held_at)

    def check(self) -> None:
        """A :class:`CrawlFailedError` when a WARC failed: 65 if one was bad input, else 74."""
        failures = [(self.warcs[index], outcome) for index in self._failed if (outcome := self.outcome(index))]
        if not failures:
            return
        codes = {o.exit_code for _, o in failures}
        error = CrawlFailedError(
            f"{len(failures)} of {len(self.warcs)} WARCs failed, each named in {self.where(SUMMARY_NAME)} (the "
            f"first: {failures[0][0].source}); the others are done, and a re-run does only what is left"
        )
        error.exit_code = EXIT_INVALID_INPUT if EXIT_INVALID_INPUT in codes else EXIT_IO_ERROR
        raise error
