"""One WARC of a crawl, done where it runs: read once from its store as a stream, extracted and selected piece by
piece, each piece committed to the store, then its output and record written.

This module is what a WARC's process imports (:mod:`selection_crawl.process` starts one per WARC, on a Dask worker
or beside the coordinator): it imports neither Prefect nor Dask, and no page's bytes leave that process; the
coordinator gets a :class:`WarcOutcome` of counts, and counts of pages while a WARC is being done.

A WARC's work is cut into pieces, each committed beside its output; a WARC taken up again starts after its last
commit, and its output has the bytes of a run in one go (docs/scaling.md, "Commits").
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Final

import orjson

import selection_core.config as rule
from selection_core.batch import ProgressCallback, dump_batch
from selection_core.chunks import select_chunk
from selection_core.dataset import BATCH, DATASET
from selection_core.errors import EXIT_INVALID_INPUT, EXIT_IO_ERROR, SelectionError
from selection_core.formats import JSON_LINES
from selection_core.jsonl import render_lines
from selection_core.layout import Chunk
from selection_crawl.commits import Commits, Piece, Progress, Tries
from selection_crawl.lease import CrawlLeaseLostError, check_fence
from selection_crawl.listing import record_of
from selection_engine.engine import write_output
from selection_engine.language import identify, model_identity
from selection_extraction import ExtractionSettings, default_extractors
from selection_extraction.extracted import NO_STATS, build_batch
from selection_extraction.extraction import extract_readings
from selection_extraction.extractors import library_version
from selection_extraction.pages import PageSet, missing_pages, no_pages_error
from selection_extraction.pool import stop_kept_workers
from selection_extraction.warc import WarcStream
from selection_storage.files import Version
from selection_storage.stores import Location, location, store
from selection_storage.stores.conditional import Expected, VersionChangedError, write_if
from selection_storage.stores.retries import patience, retried

#: The key of the crawl's own block in a WARC's record (beside the extraction record's keys).
CRAWL_KEY: Final[str] = "crawl"

#: Seconds a crawl's store calls are tried again after a transient failure (a store throttling or restarting),
#: with backoff and jitter, before the WARC fails (:mod:`selection_storage.stores.retries`).
STORE_PATIENCE_SECONDS: Final[float] = 180.0

#: Deaths of a WARC's worker in a row, in one run, without progress (a new commit; before a try is counted, a page
#: reported to the coordinator), after which the WARC fails alone: the one bound (docs/scaling.md tells how).
MAX_DEATHS: Final[int] = 4

#: Least seconds between two reports of a WARC's pages to the coordinator.
PROGRESS_SECONDS: Final[float] = 2.0

#: The Dask event topic of the pages done (a Dask worker's progress reports).
PROGRESS_TOPIC: Final[str] = "content-selection-crawl-pages"

#: Tries of an output's (or a record's) conditional write that another writer's refuses before the WARC fails.
_WRITE_TRIES: Final[int] = 4

#: The version of what an output holds for the same pages, settings and rule: raised whenever that changes, so
#: that outputs written before are done again (the versions: docs/scaling.md).
OUTPUT_LAYOUT: Final[int] = 2

#: The parts of an extraction record that decide its articles: the libraries (lxml parses for all three), their
#: settings, the limits.
_SETTINGS_KEYS: Final[tuple[str, ...]] = ("time_limit_seconds", "max_page_bytes", "decoding", "extractors", "lxml")


def _rule() -> dict[str, str]:
    """The selection rule's constants (:mod:`selection_core.config`) and the package's version."""
    constants = {name: str(value) for name, value in sorted(vars(rule).items()) if name.isupper()}
    try:
        version = importlib.metadata.version("content-selection")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {**constants, "package_version": version}


def settings_fingerprint(root: Mapping[str, Any], output_format: str = BATCH) -> str:
    """The SHA-256 of what decides a WARC's output: in its extracted batch's root, what decides its articles
    (extractor and lxml versions, their settings, the time limit, the page size limit, the decoding policy); the
    selection rule's constants, the package's version and :data:`OUTPUT_LAYOUT`; and the output's format, with
    the Parquet writer's version and the language model's identity for a dataset: two runs with the same
    fingerprint write the same bytes."""
    extraction = root["extraction"]
    decisive = {
        "extractor_versions": root["extractor_versions"],
        **{key: extraction[key] for key in _SETTINGS_KEYS},
        "rule": _rule(),
        "output_layout": OUTPUT_LAYOUT,
        "output_format": output_format,
    }
    if output_format == DATASET:  # pyarrow writes its version into the file's footer; the model decides a language
        decisive["pyarrow"] = library_version("pyarrow")
        decisive["language_model"] = model_identity()
    return hashlib.sha256(orjson.dumps(decisive, option=orjson.OPT_SORT_KEYS)).hexdigest()


def expected_fingerprint(time_limit_seconds: float, output_format: str = BATCH) -> str:
    """The settings fingerprint a WARC done here, with this time limit and output format, gets."""
    settings = ExtractionSettings(time_limit_seconds=time_limit_seconds)
    root = build_batch(PageSet("", "warc", ()), [], default_extractors(), settings, NO_STATS)
    return settings_fingerprint(root, output_format)


@dataclass(frozen=True, slots=True)
class WarcJob:
    """What a worker needs to do one WARC (a plain, picklable value: no page, no client): where it is, where its
    output goes and in which format, the time limit, the store's options, the coordinator's fingerprint (a worker
    whose own differs refuses the WARC), the run (its tries are counted per run), the WARC's index in the job, and
    the crawl's lease and token (its ``fence``): a worker writes nothing once the lease is another run's."""

    source: str
    output: str
    time_limit_seconds: float
    fingerprint: str
    run: str
    index: int
    storage_options: tuple[tuple[str, Any], ...]
    output_format: str
    fence: tuple[str, str] | None


@dataclass(frozen=True, slots=True)
class WarcOutcome:
    """What became of one WARC: ``done`` (with its counts and the output's SHA-256 and size) or ``failed`` (with
    its one-line ``reason`` and the exit status it stands for: 65 bad input, 74 the store or the machine), how
    many times it was tried in the run that did it (more than once when its workers died), and the pages its last
    try took from commits.

    :meth:`to_json` is its line of ``crawl.json`` and its record's ``crawl`` block; :meth:`from_json` reads either.
    """

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
    tries: int = 1
    from_commits: int = 0  # pages taken from the commits of an earlier try (a worker that died, an earlier run)

    @classmethod
    def failed(cls, reason: str, exit_code: int, tries: int = 1) -> WarcOutcome:
        code = exit_code if exit_code == EXIT_INVALID_INPUT else EXIT_IO_ERROR
        return cls("failed", reason, code, tries=tries)

    def to_json(self, timed: bool = True) -> dict[str, Any]:
        """The outcome as JSON: the state, then its reason or its counts, then (``timed``) the seconds and tries."""
        entry: dict[str, Any] = {"state": self.state}
        if self.state == "failed":
            entry.update(reason=self.reason, exit_code=self.exit_code)
        else:
            version = self.input_version
            entry.update(
                pages=self.pages,
                articles=self.articles,
                errors={name: self.errors.get(name, 0) for name in rule.EXTRACTORS},
                sha256=self.sha256,
                size=self.size,
                input_version=None if version is None else {"size": version.size, "tag": version.tag},
                settings_fingerprint=self.fingerprint,
            )
        if timed:
            entry["seconds"] = self.seconds
            if self.tries > 1:
                entry["tries"] = self.tries
            if self.from_commits:
                entry["from_commits"] = self.from_commits
        return entry

    @classmethod
    def from_json(cls, entry: Mapping[str, Any], shared: dict[Any, Any] | None = None) -> WarcOutcome | None:
        """The outcome of :meth:`to_json`'s JSON (None: not a final state). Equal fingerprints and error counts are
        one object each in ``shared``. KeyError, TypeError or ValueError when a key is missing or wrong."""
        shared = {} if shared is None else shared
        state = entry.get("state")
        seconds = float(entry.get("seconds", 0.0))
        tries = int(entry.get("tries", 1))
        if state == "failed":
            return cls("failed", entry["reason"], int(entry["exit_code"]), seconds=seconds, tries=tries)
        if state != "done":
            return None
        version = entry["input_version"]
        errors = {str(k): int(v) for k, v in entry["errors"].items()}
        fingerprint = str(entry["settings_fingerprint"])
        return cls(
            "done",
            pages=int(entry["pages"]),
            articles=int(entry["articles"]),
            errors=shared.setdefault(tuple(sorted(errors.items())), errors),
            sha256=str(entry["sha256"]),
            size=int(entry["size"]),
            seconds=seconds,
            input_version=None if version is None else Version(int(version["size"]), str(version["tag"])),
            fingerprint=shared.setdefault(fingerprint, fingerprint),
            tries=tries,
            from_commits=int(entry.get("from_commits", 0)),
        )


def read_record(record: Location, source: str) -> WarcOutcome | None:
    """The outcome a WARC's record tells (None: unreadable, or the record of another WARC)."""
    try:
        with store(record).open() as fh:
            content = orjson.loads(fh.read())
        return WarcOutcome.from_json(content[CRAWL_KEY]) if content["extraction"]["input"] == source else None
    except (SelectionError, OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


@patience(STORE_PATIENCE_SECONDS)
def crawl_warc(job: WarcJob, report: ProgressCallback | None = None) -> WarcOutcome:
    """Do one WARC: read it once, as a stream; extract its pages (one extractor process, kept from piece to piece
    and stopped with the WARC, each call under the time limit) and select them piece by piece, committing each
    piece; then write the output (atomic) from the pieces, the record beside it (atomic; the record is what says
    the output is done), and remove the commits. Never raises for a bad WARC, a failing store or another worker's
    fingerprint: the outcome says so (a WARC that fails keeps its commits for the next run). The record has no time
    in it: a WARC done twice, or taken up again, gets the same bytes.

    ``report(pages done, pages estimated)`` is called as each page is done, and as each piece of the output is
    written. It stops the extractor processes this process keeps (:func:`stop_kept_workers`): a WARC's process does
    one WARC (:mod:`selection_crawl.process`)."""
    started = time.perf_counter()
    here = expected_fingerprint(job.time_limit_seconds, job.output_format)
    if here != job.fingerprint:
        return WarcOutcome.failed(
            f"{job.source}: this worker's extractors, lxml or selection rule differ from the coordinator's "
            f"(fingerprint {here[:12]}, not {job.fingerprint[:12]}); run the workers on the coordinator's image",
            EXIT_IO_ERROR,
        )
    tries: Tries | None = None
    commits: Commits | None = None
    try:
        options = dict(job.storage_options)
        source = location(job.source, options)
        target = location(job.output, options, "output")
        version = store(source).listed_version()
        if version is None:
            raise missing_pages(job.source, store(source).folder_noun)
        store(target.parent).make_folders()  # a folder of the prefix, on this machine's disk
        tries, commits = Tries(target, job.run), Commits(target, version, job.fingerprint)
        done = read_record(record_of(target), job.source)  # None when there is none
        if done and (done.input_version, done.fingerprint) == (version, job.fingerprint):
            listed = store(target).listed_version()
            if listed and listed.size == done.size:  # done meanwhile (the WARC sent twice): nothing to do...
                _clean_up(job, tries, commits, done=True)  # ...but what a worker killed as it ended left behind
                return done
        outcome = _crawl(job, source, target, version, tries, commits, report or (lambda _done, _estimate: None))
    except CrawlLeaseLostError as exc:  # another run's prefix now: nothing more is written, not even a clean-up
        return WarcOutcome.failed(str(exc), exc.exit_code)
    except SelectionError as exc:  # first: a store's read and write errors are OSErrors too
        outcome = WarcOutcome.failed(str(exc), exc.exit_code)
    except OSError as exc:  # the folder of the output could not be made
        outcome = WarcOutcome.failed(f"{job.output}: {exc.strerror or exc}", EXIT_IO_ERROR)
    except KeyboardInterrupt:  # stopped: its commits stay for the next run, a stop is not a try
        _clean_up(job, tries, commits, done=False)
        raise
    finally:
        stop_kept_workers()  # its extractor process lives as long as the WARC: a worker stopped later leaves none
    _clean_up(job, tries, commits, done=outcome.state == "done")
    return dataclasses.replace(outcome, seconds=round(time.perf_counter() - started, 3))


def _clean_up(job: WarcJob, tries: Tries | None, commits: Commits | None, done: bool) -> None:
    """Remove the WARC's count of tries, and its commits once it is ``done``; nothing once its lease is lost, and
    what a failing store keeps is left for the next run."""
    if tries is None or commits is None:
        return
    with contextlib.suppress(SelectionError, OSError):  # a lost lease among them
        tries.remove(lambda: fenced(job))
        if done:
            commits.remove(lambda: fenced(job))


def fenced(job: WarcJob) -> None:
    """Raise :class:`~selection_crawl.lease.CrawlLeaseLostError` when the crawl's lease is another run's now (a
    job without a fence: never)."""
    if job.fence is not None:
        check_fence(*job.fence, dict(job.storage_options))


def _crawl(
    job: WarcJob,
    source: Location,
    target: Location,
    version: Version,
    tries: Tries,
    commits: Commits,
    report: ProgressCallback,
) -> WarcOutcome:
    number = 1  # of this try
    try:
        with tempfile.TemporaryFile() as pieces:  # anonymous: gone with this process, whatever kills it
            progress, invalid = commits.load(pieces)
            commits.remove(lambda: fenced(job), invalid)  # fenced
            number, deaths = tries.start(progress.commits)
            if deaths >= MAX_DEATHS:
                reason = (
                    f"{job.source}: its workers died {deaths} times in a row before its next commit; it fails "
                    "alone (run again to try again)"
                )
                return WarcOutcome.failed(reason, EXIT_IO_ERROR, tries=number - 1)
            done, root = _extract_and_select(job, source, commits, pieces, progress, report)

            def write(expected: Expected) -> tuple[str, int]:  # from the start of the pieces at each try
                pieces.seek(0)
                lines = _whole_lines(pieces, lambda: report(done.articles, done.articles))
                return write_output(target, lines, dataset=job.output_format == DATASET, expected=expected)

            sha256, size = _fenced_write(job, target, lambda expected: retried(lambda: write(expected)))
    except CrawlLeaseLostError:
        raise
    except SelectionError as exc:
        return WarcOutcome.failed(str(exc), exc.exit_code, tries=number)
    outcome = WarcOutcome(
        "done",
        pages=done.stats.pages,
        articles=done.articles,
        errors=dict(done.stats.errors),
        sha256=sha256,
        size=size,
        input_version=version,
        fingerprint=job.fingerprint,
        tries=number,
        from_commits=progress.articles,  # the loaded commits' (one article a page)
    )
    crawl = {"format": job.output_format, **outcome.to_json(timed=False)}
    record, data = record_of(target), dump_batch({**root, CRAWL_KEY: crawl})
    _fenced_write(job, record, lambda expected: write_if(record, data, expected.version))
    return outcome


def _fenced_write(job: WarcJob, where: Location, write: Callable[[Expected], Any]) -> Any:
    """``write(expected)``, conditioned on the version of ``where`` found before the fence is checked: a process
    frozen between its check and its write cannot publish once another run has taken the lease over and written
    there (the write is refused); refused because another try of this run wrote there meanwhile (a WARC sent
    twice: the same bytes), it is tried again over what is there then, after the fence is checked again."""
    for _ in range(_WRITE_TRIES - 1):
        expected = Expected(store(where).listed_version())
        fenced(job)
        try:
            return write(expected)
        except VersionChangedError:
            continue
    expected = Expected(store(where).listed_version())
    fenced(job)
    return write(expected)


def _whole_lines(pieces: BinaryIO, beat: Callable[[], None], size: int = 8 << 20) -> Iterator[bytes]:
    """The file's lines, about ``size`` bytes at a time, ``beat()`` before each."""
    while data := pieces.read(size):
        beat()
        yield data if data.endswith(b"\n") else data + pieces.readline()


def _extract_and_select(
    job: WarcJob,
    source: Location,
    commits: Commits,
    pieces: BinaryIO,
    progress: Progress,
    report: ProgressCallback,
) -> tuple[Progress, dict[str, Any]]:
    """Extract and select the WARC's pages after its last commit (``progress``, whose pieces ``pieces`` holds),
    appending each piece's selected articles (or rows) to ``pieces``, committing each; the progress at the end and
    the extraction record's root."""
    settings = ExtractionSettings(time_limit_seconds=job.time_limit_seconds, workers=1, keep_workers=True)
    extractors = default_extractors()
    stream = WarcStream(source, job.source, settings.max_page_bytes, progress.cursor)
    before = progress.articles

    def reported(pages: int) -> None:  # the pages estimated: as many again for each part of the WARC not read
        read = max(stream.position, 1)
        report(pages, max(pages, round(pages * stream.size / read)) if stream.size else pages)

    def pages_done(done: int, _total: int) -> None:
        if done:
            reported(before + done)

    pages, piece = iter(stream), Piece(stream, iter(()), stream.start)  # an empty piece, ending at the start
    while not piece.last:
        piece = Piece(stream, pages, piece.after)
        articles: list[dict[str, Any]] = []
        stats = extract_readings(piece, articles.append, settings, extractors, pages_done)
        if not articles:
            break
        data = render_lines(articles)
        chunk = Chunk(progress.articles, progress.articles + len(articles), progress.begin, progress.begin + len(data))
        language_of = identify if job.output_format == DATASET else None
        output = select_chunk(data, job.source, chunk, JSON_LINES, dataset=language_of).output
        assert output is not None
        pieces.write(output)
        before = chunk.stop
        start = progress.cursor
        progress = dataclasses.replace(
            progress,
            cursor=piece.after,
            articles=chunk.stop,
            stats=progress.stats + stats,
            commits=progress.commits + 1,
            begin=chunk.end,
        )
        fenced(job)
        commits.commit(start, progress, output)
        reported(progress.articles)  # alive: a commit may take as long as the piece's last pages
    kinds = {k: v for k, v in stream.kinds.items() if v}
    if not progress.articles:
        raise no_pages_error(job.source, kinds)
    root = build_batch(PageSet(job.source, "warc", (), kinds), [], extractors, settings, progress.stats)
    del root["articles"]
    return progress, root
