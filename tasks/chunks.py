"""Chunked selection: a batch cut into runs of consecutive articles, each read, scored and written by one task run.

The selection rule is per article and deterministic, so scoring a batch chunk by
chunk, in any order and on any worker, gives the same selections as scoring it
whole, as long as every article keeps its index in the batch. What happens:

1. :func:`plan_batch` (in the flow's process) hashes the input and finds where
   each article lies in its bytes (:func:`selection_core.layout.scan_layout`),
   without parsing the articles. It validates the rest of the document (the
   *envelope*).
2. :func:`select_chunk` (on the chosen task runner, once per chunk) reads its
   own byte span of the input, parses and validates it in full, scores it,
   and writes its articles, rendered exactly as in a whole written batch, to a
   temporary *part* file beside the output (and its report lines beside the
   report). It returns only counts and the rows of the scores table.
3. :func:`assemble_batch` (in the flow's process) writes the envelope and the
   parts, in order, into the output's staged temporary file, with the
   SHA-256 of what it writes, and commits output and report as one group
   (:class:`selection_storage.files.StagedFile`).

So nothing as large as an article crosses a process boundary or Prefect's API:
a task's parameter is a :class:`ChunkJob` (a path, byte offsets, part paths)
and its result a :class:`ChunkOutcome` (counts and at most ``max_table_rows``
rows); the number of task runs grows with chunks, not with articles. Workers
must see the same files as the flow (one machine, or a shared file system).

Failures never leave a part behind: the flow removes every part of the run when
any step fails, and a part left by a killed run is a temporary file of the
output (its name carries the flow process's id), removed by the next write to
that output. Invalid input found by a worker is reported as the whole-document
parse reports it (:func:`canonical_error`): the same one line, with the place
in the whole file.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import secrets
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from prefect import task

import selection_core as sc
from selection_core.layout import RUN_PREFIX, RUN_SUFFIX, BatchLayout, envelope_bytes, scan_layout
from selection_storage.chunks import chunk_bounds
from selection_storage.files import (
    FileIdentity,
    StagedFile,
    clean_stale_temporaries,
    open_input,
    process_alive,
    read_error,
    read_input,
    read_span,
    report_lines,
    temporary_name,
)
from tasks.artifacts import article_row
from tasks.batch import WrittenFile
from tasks.logs import run_logger
from tasks.options import chunk_run_namer, io_task_options

#: Name of the task that scores one chunk (its runs are ``select-chunk-<start>``).
CHUNK_TASK_NAME: Final[str] = "select-chunk"

#: Chunks per worker when no chunk size is given: enough to even out uneven
#: chunks, few enough that the fixed cost of a task run stays small. That cost is
#: paid by the flow's own process and is not small: every submission serializes
#: the run's context and settings (about 0.2-0.7 s of CPU on this machine with
#: Prefect 3.9.1's process pool and prefect-dask).
CHUNKS_PER_WORKER: Final[int] = 4

#: Bounds of the automatic chunk size (articles).
MIN_AUTO_CHUNK_SIZE: Final[int] = 500
MAX_AUTO_CHUNK_SIZE: Final[int] = 25_000

#: Bytes copied at a time when parts are put together.
_COPY_BLOCK: Final[int] = 8 << 20

_IO_TASK_OPTIONS: dict[str, Any] = io_task_options()


def auto_chunk_size(n_articles: int, workers: int) -> int:
    """Articles per chunk when none is given: about ``CHUNKS_PER_WORKER`` chunks per worker.

    >>> auto_chunk_size(100_000, 2), auto_chunk_size(1_000, 2), auto_chunk_size(10**7, 2)
    (12500, 500, 25000)
    """
    per_chunk = -(-n_articles // max(1, CHUNKS_PER_WORKER * workers))
    return max(MIN_AUTO_CHUNK_SIZE, min(MAX_AUTO_CHUNK_SIZE, per_chunk))


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class BatchPlan:
    """What the flow knows of a batch before it is scored: the envelope and where each article lies.

    ``layout`` is None when the articles could not be delimited without parsing
    (a root key spelled with escapes, say); the batch was then parsed whole and
    ``doc`` holds it, to be scored in one piece.
    """

    path: Path
    identity: FileIdentity
    sha256: str
    size_bytes: int
    envelope: dict[str, Any]
    layout: BatchLayout | None
    doc: dict[str, Any] | None = None

    @property
    def article_count(self) -> int:
        if self.layout is not None:
            return self.layout.articles
        assert self.doc is not None
        return len(self.doc["articles"])


def canonical_error(path: Path) -> None:
    """Parse the whole input as the one-piece path does; raise its error, if it has one.

    Every refusal of the chunked path goes through here, so a user gets the same
    one line (with the place in the whole file) whichever runner ran.
    """
    sc.parse_batch(read_input(path), str(path))


@task(name="plan-batch", **_IO_TASK_OPTIONS)
def plan_batch(input_path: Path) -> BatchPlan:
    """Hash the batch, find where its articles lie, and validate everything else.

    Args:
        input_path: The ``*_extracted.json`` file.

    Raises:
        InvalidBatchError: the batch is not valid (as the whole-document parse reports it).
        ReadError: a transient read error, retried with backoff.
    """
    path = Path(input_path)
    with open_input(path) as fh:
        try:
            identity = FileIdentity.of(os.fstat(fh.fileno()))
            if identity.size == 0:
                canonical_error(path)  # refuses the empty file
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                sha256 = hashlib.sha256(data).hexdigest()
                layout = scan_layout(data)
                envelope_data = envelope_bytes(data, layout) if layout is not None else b""
        except OSError as exc:
            if isinstance(exc, sc.SelectionError):
                raise
            raise read_error(path, exc) from exc
    envelope: dict[str, Any] | None = None
    if layout is not None:
        try:
            envelope = sc.parse_batch(envelope_data, str(path))
        except sc.InvalidBatchError:
            layout = None
    doc = None
    if layout is None or envelope is None:
        # Not delimited, or an invalid envelope: the whole-document parse decides
        # (and gives the message); a valid batch is then scored in one piece.
        data = read_input(path)
        doc = sc.parse_batch(data, str(path))
        sha256 = hashlib.sha256(data).hexdigest()  # of the bytes this document was parsed from
        envelope = {k: ([] if k == "articles" else v) for k, v in doc.items()}
        layout = None
        run_logger().info("The articles of %s could not be delimited without parsing; scoring it in one piece", path)
    plan = BatchPlan(path, identity, sha256, identity.size, envelope, layout, doc)
    run_logger().info(
        "Read %s: %d articles, %d bytes, sha256 %s", path, plan.article_count, plan.size_bytes, plan.sha256
    )
    return plan


# --------------------------------------------------------------------------- one chunk


class ChunkJob:
    """What one task run needs to score articles ``start .. stop - 1`` of a batch.

    A plain class on purpose: Prefect walks the lists, dicts and dataclasses it
    is given as task parameters (looking for futures) but not other objects, and
    Dask names the task with :meth:`__dask_tokenize__`. It holds no article:
    the worker reads its byte ``span`` of ``input_path`` itself, after checking
    that the file is still the version (``identity``) the flow planned from.
    """

    __slots__ = (
        "identity",
        "input_path",
        "output_part",
        "output_path",
        "owner_host",
        "owner_pid",
        "report_part",
        "report_path",
        "span",
        "start",
        "stop",
        "table_rows",
    )

    def __init__(
        self,
        *,
        input_path: str,
        identity: FileIdentity,
        start: int,
        stop: int,
        span: tuple[int, int],
        output_path: str,
        output_part: str,
        report_path: str | None,
        report_part: str | None,
        table_rows: int,
        owner_pid: int,
        owner_host: str,
    ) -> None:
        self.input_path = input_path
        self.owner_pid = owner_pid
        self.owner_host = owner_host
        self.output_path = output_path
        self.report_path = report_path
        self.identity = identity
        self.start = start
        self.stop = stop
        self.span = span
        self.output_part = output_part
        self.report_part = report_part
        self.table_rows = table_rows

    def __repr__(self) -> str:
        return f"ChunkJob(start={self.start}, stop={self.stop}, bytes={self.span[0]}..{self.span[1]})"

    def __dask_tokenize__(self) -> tuple[str, str, int, int]:
        # With pure=True (prefect-dask's choice) Dask names a task by hashing its
        # arguments unless they name themselves. Each submission also carries its
        # own task-run id, so two never share a key.
        return ("content-selection-chunk", self.output_part, self.start, self.stop)


class ChunkOutcome:
    """What a scored chunk sends back: its counts, its table rows, where its parts are."""

    __slots__ = ("output_part", "report_part", "rows", "start", "stop", "summary")

    def __init__(
        self,
        start: int,
        stop: int,
        summary: sc.Summary,
        rows: list[dict[str, Any]],
        output_part: str,
        report_part: str | None,
    ) -> None:
        self.start = start
        self.stop = stop
        self.summary = summary
        self.rows = rows
        self.output_part = output_part
        self.report_part = report_part

    def __len__(self) -> int:
        return self.stop - self.start

    def __repr__(self) -> str:
        return f"ChunkOutcome(start={self.start}, stop={self.stop})"


def plan_jobs(
    plan: BatchPlan,
    chunk_size: int,
    output_path: Path,
    report_path: Path | None,
    table_rows: int,
    owner_pid: int | None = None,
) -> list[ChunkJob]:
    """The jobs of a planned batch, in order, ``chunk_size`` articles each.

    Part files are named as temporary files of the output (and report) owned
    by the flow's process, ``owner_pid``: one random token per run, then the
    chunk's number.
    """
    if plan.layout is None:
        raise ValueError("a batch whose articles were not delimited is scored in one piece")
    pid = os.getpid() if owner_pid is None else owner_pid
    token = secrets.token_hex(4)
    jobs = []
    for number, (start, stop) in enumerate(chunk_bounds(plan.layout.articles, chunk_size)):
        part = f"{token}{number:08x}"
        jobs.append(
            ChunkJob(
                input_path=str(plan.path),
                identity=plan.identity,
                start=start,
                stop=stop,
                span=plan.layout.run_span(start, stop),
                output_path=str(output_path),
                report_path=None if report_path is None else str(report_path),
                output_part=str(temporary_name(output_path, pid, part)),
                report_part=None if report_path is None else str(temporary_name(report_path, pid, part)),
                table_rows=table_rows,
                owner_pid=pid,
                owner_host=socket.gethostname(),
            )
        )
    return jobs


def _write_part(target: Path, part: str, pieces: Iterable[bytes]) -> None:
    """Write a part file of ``target`` (named in errors)."""
    path = Path(part)
    try:  # a rerun of the same chunk (a retry, a worker lost by Dask) starts afresh
        os.unlink(path)
    except FileNotFoundError:
        pass
    staged = StagedFile(target, path, durable=False)  # the assembled file is fsynced
    try:
        for piece in pieces:
            staged.write(piece)
        staged.finish()
    except BaseException:
        staged.discard()
        raise


def _batched_render(articles: Sequence[dict[str, Any]], per_write: int = 256) -> Iterable[bytes]:
    for i in range(0, len(articles), per_write):
        yield (sc.ARTICLE_SEPARATOR if i else b"") + sc.render_articles(articles[i : i + per_write])


def _drop_parts_of_a_gone_run(chunk: ChunkJob) -> None:
    """Remove the chunk's parts if the flow process that asked for them has died.

    A worker can outlive a killed flow (a process pool's worker finishes its
    task first). Parts are named as temporaries of the flow's process, and the
    next write to the output removes those of a dead process; a part written
    after that must remove itself. Checked only on the flow's own machine
    (process ids mean nothing elsewhere).
    """
    if chunk.owner_host != socket.gethostname() or process_alive(chunk.owner_pid):
        return
    discard_parts([chunk])
    raise RuntimeError(f"the run that asked for articles {chunk.start}..{chunk.stop - 1} is gone; nothing kept")


@task(
    name=CHUNK_TASK_NAME,
    task_run_name=chunk_run_namer(CHUNK_TASK_NAME),
    **_IO_TASK_OPTIONS,
)
def select_chunk(chunk: ChunkJob) -> ChunkOutcome:
    """Read, validate, score and write one chunk of a batch with the deterministic core.

    Retried only on transient I/O errors; an invalid chunk fails at once (the
    flow then reports it as the whole-document parse does).

    Args:
        chunk: Which articles, where they lie in the input, where to write them.

    Returns:
        The chunk's counts, its rows of the scores table, and its part files.
    """
    path = Path(chunk.input_path)
    data = read_span(path, chunk.identity, chunk.span[0], chunk.span[1], RUN_PREFIX, RUN_SUFFIX)
    doc = sc.parse_batch(data, f"{path} (articles {chunk.start}..{chunk.stop - 1})")
    del data
    articles = doc["articles"]
    if len(articles) != chunk.stop - chunk.start:
        raise sc.InvalidBatchError(f"{path}: articles {chunk.start}..{chunk.stop - 1} are not where they were found")
    selections = [sc.select_article(article, chunk.start + offset) for offset, article in enumerate(articles)]
    sc.apply_selections(doc, selections, start=chunk.start)
    if chunk.report_path is not None and chunk.report_part is not None:
        _write_part(Path(chunk.report_path), chunk.report_part, report_lines(selections))
    _write_part(Path(chunk.output_path), chunk.output_part, _batched_render(articles))
    _drop_parts_of_a_gone_run(chunk)
    shown = max(0, min(chunk.stop, chunk.table_rows) - chunk.start)
    rows = [article_row(articles[i], selections[i]) for i in range(shown)]
    run_logger().debug("Scored articles %d..%d", chunk.start, chunk.stop - 1)
    return ChunkOutcome(chunk.start, chunk.stop, sc.summarize(selections), rows, chunk.output_part, chunk.report_part)


# --------------------------------------------------------------------------- assemble


def discard_parts(jobs: Iterable[ChunkJob]) -> None:
    """Remove every part file of these jobs that exists (never raises)."""
    for job in jobs:
        for part in (job.output_part, job.report_part):
            if part is not None:
                try:
                    os.unlink(part)
                except OSError:
                    pass


def _copy_part(part: str, staged: StagedFile, digest: Any | None) -> int:
    """Append a part file to ``staged`` (and to ``digest``); the bytes copied."""
    buffer = bytearray(_COPY_BLOCK)
    view = memoryview(buffer)
    copied = 0
    with open(part, "rb", buffering=0) as fh:
        while got := fh.readinto(buffer):
            if digest is not None:
                digest.update(view[:got])
            staged.write(view[:got])
            copied += got
    return copied


class PartJoiner:
    """Joins the chunks' parts, in order, into the staged output (and report).

    The flow feeds it each chunk as it completes (:meth:`add`), so the copying
    and hashing, and the disk's writeback, overlap the scoring of the later
    chunks; :func:`assemble_batch` then completes and commits it. The first
    failure discards its staged files and makes it unusable (``usable``
    becomes False); :func:`assemble_batch` then joins the parts again itself.
    The parts are never removed here.
    """

    def __init__(self, envelope: dict[str, Any], any_articles: bool, output_path: Path, report_path: Path | None):
        for target in (output_path, report_path):
            if target is not None:
                clean_stale_temporaries(target)
        self.output_path = output_path
        self._head, self._tail = sc.envelope_parts(envelope, any_articles)
        self._digest = hashlib.sha256()
        self._size = 0
        self._parts = 0
        self._files: list[StagedFile] = []
        self.usable = True
        self.error: BaseException | None = None
        try:
            self._report = None if report_path is None else self._open(report_path)
            self._output = self._open(output_path)
            self._append(self._head)
        except BaseException as exc:
            self._fail(exc)
            raise

    def _open(self, target: Path) -> StagedFile:
        staged = StagedFile(target)
        self._files.append(staged)
        return staged

    def _append(self, data: bytes) -> None:
        self._digest.update(data)
        self._output.write(data)
        self._size += len(data)

    def _fail(self, exc: BaseException) -> None:
        self.usable = False
        self.error = exc
        for staged in self._files:
            staged.discard()

    def add(self, outcome: ChunkOutcome) -> None:
        """Append one chunk's parts (the next in order). Never raises: a failure is kept in ``error``."""
        if not self.usable:
            return
        try:
            if self._report is not None:
                assert outcome.report_part is not None
                _copy_part(outcome.report_part, self._report, None)
            if self._parts:
                self._append(sc.ARTICLE_SEPARATOR)
            self._size += _copy_part(outcome.output_part, self._output, self._digest)
            self._parts += 1
        except Exception as exc:  # noqa: BLE001 - kept, and the parts are joined again by assemble_batch
            self._fail(exc)

    def complete(self) -> WrittenFile:
        """Write the rest, flush both files to disk, and rename the report then the output into place."""
        if not self.usable:
            raise RuntimeError("this joiner failed earlier") from self.error
        try:
            self._append(self._tail)
            for staged in self._files:
                staged.finish()
        except BaseException as exc:
            self._fail(exc)
            raise
        self.usable = False
        for number, staged in enumerate(self._files):
            try:
                staged.commit()
            except BaseException:
                for later in self._files[number + 1 :]:
                    later.discard()
                raise
        return WrittenFile(Path(self.output_path), self._digest.hexdigest(), self._size)

    def discard(self) -> None:
        """Remove the staged files (never raises)."""
        self._fail(RuntimeError("discarded"))


@task(name="assemble-batch", **_IO_TASK_OPTIONS)
def assemble_batch(
    envelope: dict[str, Any],
    outcomes: Sequence[ChunkOutcome],
    output_path: Path,
    report_path: Path | None,
    joined: PartJoiner | None = None,
) -> WrittenFile:
    """Write the selected batch (and the report) from the chunks' parts, atomically and as one group.

    Completes ``joined`` when it holds every part, else joins the parts here (a
    retry after a transient error always does). The report is renamed first, so
    that where the output exists, its report does too; a failure before the
    renames leaves neither. The parts are removed once both files are in place.

    Returns:
        The written output, with the SHA-256 of its bytes.
    """
    if joined is None or not joined.usable:
        joined = PartJoiner(envelope, any(len(o) for o in outcomes), output_path, report_path)
        for outcome in outcomes:
            joined.add(outcome)
            if not joined.usable:
                assert joined.error is not None
                raise joined.error
    written = joined.complete()
    for outcome in outcomes:
        for part in (outcome.output_part, outcome.report_part):
            if part is not None:
                try:
                    os.unlink(part)
                except OSError:
                    pass
    run_logger().info("Wrote %s: %d bytes, sha256 %s", output_path, written.size_bytes, written.sha256)
    return written
