"""The selection engine of a batch file: plan it, select its chunks (here or where a map sends them), join them."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import socket
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import selection_core as sc
from selection_core.batch import ProgressCallback
from selection_core.chunks import SelectedChunk, select_chunk
from selection_core.dataset import BATCH, DATASET, OUTPUT_FORMATS
from selection_core.evidence import MAX_CLOSEST_CALLS, ShownEvidence, merge_evidence
from selection_core.formats import FORMATS, BatchFormat, format_of
from selection_core.layout import Chunk, Layout, scan
from selection_engine.dataset import DatasetWriter, require_dataset_extra
from selection_engine.language import identify
from selection_storage.atomic import Staged, StagedFile, commit_in_order, process_alive
from selection_storage.files import InputChangedError, Version
from selection_storage.paths import resolve_report_path, resolve_selected_path
from selection_storage.stores import Location, location, remove_orphans_beside, store
from selection_storage.stores.conditional import Expected, StagedIf

#: Most bytes and articles of input in one chunk selected in this process.
CHUNK_BYTES: Final[int] = 8 << 20
CHUNK_ARTICLES: Final[int] = 500

#: On a parallel runner: about this many chunks per worker, each of at most ``MAX_CHUNK_BYTES``.
CHUNKS_PER_WORKER: Final[int] = 4
MAX_CHUNK_BYTES: Final[int] = 64 << 20
MAX_CHUNK_ARTICLES: Final[int] = 25_000


def chunk_limits(size: int, workers: int, chunk_articles: int | None = None) -> tuple[int, int]:
    """Most bytes and articles of a chunk of a ``size``-byte batch selected by ``workers`` workers."""
    if chunk_articles is not None and chunk_articles < 1:
        raise ValueError(f"chunk_articles must be at least 1, got {chunk_articles}")
    if workers <= 1:
        return CHUNK_BYTES, chunk_articles or CHUNK_ARTICLES
    if chunk_articles is not None:
        return MAX_CHUNK_BYTES, chunk_articles
    per_chunk = -(-size // (CHUNKS_PER_WORKER * workers))
    return max(CHUNK_BYTES, min(MAX_CHUNK_BYTES, per_chunk)), MAX_CHUNK_ARTICLES


@dataclass(frozen=True)
class Plan:
    """A batch file planned: its version and SHA-256, its format, its validated envelope and its chunks."""

    path: Location
    identity: Version
    sha256: str
    format: BatchFormat
    envelope: dict[str, Any]
    layout: Layout


def plan_batch(
    input_path: str | os.PathLike[str] | Location, workers: int = 1, chunk_articles: int | None = None
) -> Plan:
    """Read the batch once: hash it, cut it into chunks (:func:`chunk_limits`), validate its envelope.

    Raises:
        InvalidBatchError: the file is missing or unreadable, its articles cannot be delimited, or its envelope is bad.
        InputChangedError: the file changed while it was read.
        ReadError: a transient read error.
    """
    path = location(input_path)
    fmt = format_of(path.name)
    digest = hashlib.sha256()
    hashing: Future[None] | None = None  # the last data read's, in a thread beside the scan (sha256 releases the GIL)
    read_bytes = 0
    with store(path).reading() as (identity, read_input), ThreadPoolExecutor(1) as hasher:

        def read(n: int) -> bytes:
            nonlocal read_bytes, hashing
            data = read_input(n)
            if hashing is not None:
                hashing.result()  # in order, and at most one data read waits
            hashing = hasher.submit(digest.update, data)
            read_bytes += len(data)
            return data

        max_bytes, max_articles = chunk_limits(identity.size, workers, chunk_articles)
        layout = scan(read, str(path), max_bytes, max_articles, fmt.lines)
        if hashing is not None:
            hashing.result()
    if read_bytes != identity.size or store(path).version() != identity:
        raise InputChangedError(f"{path}: the file changed while it was being read; run again once it is complete")
    envelope: dict[str, Any] = {}
    if not fmt.lines:  # the envelope's offsets past the empty array are the file's past the ']'
        shift = layout.close - layout.open - 1
        envelope = sc.parse_batch(layout.envelope, str(path), lambda b: b if b <= layout.open else b + shift)
    return Plan(path, identity, digest.hexdigest(), fmt, envelope, layout)


class ChunkJob:
    """What selecting one chunk needs: where it lies, the file's version, where its parts go (None: return the
    bytes). A plain class, not a dataclass, so that Prefect does not walk into it looking for futures."""

    input_path: str
    storage_options: dict[str, Any]
    identity: Version
    chunk: Chunk
    format_name: str
    dataset: bool
    output_path: str
    report_path: str | None
    output_part: str | None
    report_part: str | None
    table_rows: int
    close_calls: int
    owner_pid: int
    owner_host: str

    def __init__(self, **fields: Any) -> None:
        if fields.keys() != ChunkJob.__annotations__.keys():
            raise TypeError(f"ChunkJob takes exactly the fields {sorted(ChunkJob.__annotations__)}")
        self.__dict__.update(fields)

    @property
    def start(self) -> int:
        """The chunk's first article (the task run's name)."""
        return self.chunk.start

    def __repr__(self) -> str:
        c = self.chunk
        return f"ChunkJob(start={c.start}, stop={c.stop}, bytes={c.begin}..{c.end})"

    def __dask_tokenize__(self) -> tuple[str, str | None, int, int]:
        # With pure=True (prefect-dask's choice) Dask names a task by hashing its arguments, unless they name it.
        return ("content-selection-chunk", self.output_part, self.chunk.start, self.chunk.stop)


def plan_jobs(
    plan: Plan,
    output_path: Location,
    report_path: Location | None,
    table_rows: int = 0,
    close_calls: int = 0,
    parts: str | None = None,
    dataset: bool = False,
) -> list[ChunkJob]:
    """The jobs of a planned batch, in order; with ``parts`` (the token of this process's staged output and
    report), each writes part files of them, which live as long as those are locked; with ``dataset``, each
    gives its dataset rows instead of its articles."""

    def part(target: Location | None, number: int) -> str | None:
        return None if target is None or parts is None else store(target).part(parts, number)

    return [
        ChunkJob(
            input_path=str(plan.path),
            storage_options=dict(store(plan.path).options),
            identity=plan.identity,
            chunk=chunk,
            format_name=plan.format.name,
            dataset=dataset,
            output_path=str(output_path),
            report_path=None if report_path is None else str(report_path),
            output_part=part(output_path, number),
            report_part=part(report_path, number),
            table_rows=table_rows,
            close_calls=close_calls,
            owner_pid=os.getpid(),
            owner_host=socket.gethostname(),
        )
        for number, chunk in enumerate(plan.layout.chunks)
    ]


def select_job(job: ChunkJob) -> SelectedChunk:
    """Read, validate and select one chunk; its parts are written when the job names them."""
    path, chunk, fmt = location(job.input_path, job.storage_options), job.chunk, FORMATS[job.format_name]
    data = store(path).read_span(job.identity, chunk.begin, chunk.end, fmt.chunk_prefix, fmt.chunk_suffix)
    with_report = job.report_path is not None
    language_of = identify if job.dataset else None
    selected = select_chunk(data, str(path), chunk, fmt, job.table_rows, job.close_calls, with_report, language_of)
    del data
    if job.output_part is None:
        return selected
    if job.report_part is not None and job.report_path is not None and selected.report is not None:
        _write_part(Path(job.report_path), job.report_part, selected.report)
    assert selected.output is not None
    _write_part(Path(job.output_path), job.output_part, selected.output)
    selected.output = selected.report = None
    if job.owner_host == socket.gethostname() and not process_alive(job.owner_pid):
        # The run that asked is gone (a pool's worker can outlive a killed flow): keep nothing.
        discard_parts([job])
        raise RuntimeError(f"the run that asked for articles {chunk.start}..{chunk.stop - 1} is gone; nothing kept")
    return selected


def _write_part(target: Path, part: str, data: bytes) -> None:
    Path(part).unlink(missing_ok=True)  # a rerun of the same chunk (a retry, a worker lost by Dask) starts afresh
    staged = StagedFile(target, Path(part), durable=False)  # the joined file is fsynced
    staged.write_all([data])
    staged.release()


def discard_parts(jobs: Iterable[ChunkJob]) -> None:
    """Remove every part file of these jobs that exists (never raises)."""
    for job in jobs:
        for part in (job.output_part, job.report_part):
            if part is not None:
                with contextlib.suppress(OSError):
                    os.unlink(part)


class _Joiner:
    """The staged output (and report), to which the chunks are appended in order, hashed as written: the batch's
    bytes, or with ``dataset`` the rows of a Parquet file."""

    def __init__(
        self,
        output_path: Location,
        report_path: Location | None,
        dataset: bool,
        envelope: tuple[bytes, bytes] = (b"", b""),
        separator: bytes = b"",
        expected: Expected | None = None,
    ) -> None:
        remove_orphans_beside(t for t in (output_path, report_path) if t is not None)
        self.token = secrets.token_hex(8)  # of both staged files: their parts are named after them
        head, self._tail = envelope
        self._separator = separator
        self._digest = hashlib.sha256()
        self.size = 0
        self._chunks = 0
        self._files: list[Staged] = []
        self._rows: DatasetWriter | None = None
        try:
            self._report = None if report_path is None else self._open(report_path)
            self._output = self._open(output_path, expected)
            self._append(head)
            if dataset:
                self._rows = DatasetWriter(self._append)
        except BaseException:
            self.discard()
            raise

    def _open(self, target: Location, expected: Expected | None = None) -> Staged:
        staged = store(target).stage(self.token) if expected is None else StagedIf(target, expected.version)
        self._files.append(staged)
        return staged

    def _append(self, data: bytes | memoryview) -> None:
        self._digest.update(data)
        self._output.write(data)
        self.size += len(data)

    def add(self, selected: SelectedChunk, job: ChunkJob) -> None:
        if self._report is not None:
            if selected.report is not None:
                self._report.write(selected.report)
            elif job.report_part is not None:
                _copy(job.report_part, self._report.write)
        if selected.output is not None:
            self.add_output(selected.output)
        elif self._rows is not None:
            self.add_output(Path(str(job.output_part)).read_bytes())
        else:
            if self._chunks:
                self._append(self._separator)
            _copy(str(job.output_part), self._append)
            self._chunks += 1

    def add_output(self, output: bytes | memoryview) -> None:
        """Append a chunk's selected articles as written (or its dataset rows)."""
        if self._rows is not None:
            self._rows.add(output)
        else:
            if self._chunks:
                self._append(self._separator)
            self._append(output)
        self._chunks += 1

    def complete(self) -> str:
        """Write the tail (the dataset's last rows and footer), flush, rename the report then the output; the
        output's SHA-256."""
        if self._rows is not None:
            self._rows.close()
        self._append(self._tail)
        for staged in self._files:
            staged.finish()
        commit_in_order(self._files)
        return self._digest.hexdigest()

    def discard(self) -> None:
        for staged in self._files:
            staged.discard()


def _copy(part: str, write: Callable[[memoryview], None], read_size: int = 8 << 20) -> None:
    buffer = bytearray(read_size)
    view = memoryview(buffer)
    with open(part, "rb", buffering=0) as fh:
        while got := fh.readinto(buffer):
            write(view[:got])


def write_output(
    target: Location, outputs: Iterable[bytes], dataset: bool = False, expected: Expected | None = None
) -> tuple[str, int]:
    """Write the selected articles of a JSON Lines batch, given as written (or their dataset rows: a Parquet
    file), one piece after the other, as one output, atomically; its SHA-256 and size. The bytes are those of a
    selection of the whole batch, however the articles are cut into pieces. With ``expected``, only over the
    version expected (:class:`~selection_storage.stores.conditional.VersionChangedError` when another writer
    changed it since)."""
    joiner = _Joiner(target, None, dataset, expected=expected)
    try:
        for output in outputs:
            joiner.add_output(output)
        return joiner.complete(), joiner.size
    finally:
        joiner.discard()


@dataclass(frozen=True)
class Selected:
    """What a selection of a batch file wrote, its counts, and (when asked for) what the artifacts show."""

    input_path: Location
    input_sha256: str
    input_size: int
    output_path: Location
    output_sha256: str
    output_size: int
    report_path: Location | None
    summary: sc.Summary
    chunks: int
    evidence: ShownEvidence | None = None


#: Runs :func:`select_job` on every job and yields the results in the jobs' order.
MapJobs = Callable[[Sequence[ChunkJob]], Iterable[SelectedChunk]]


def select_file(
    input_path: str | os.PathLike[str] | Location,
    output_path: str | os.PathLike[str] | Location | None = None,
    report_path: str | os.PathLike[str] | Location | None = None,
    *,
    storage_options: dict[str, Any] | None = None,
    evidence_rows: int | None = None,
    chunk_articles: int | None = None,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    map_jobs: MapJobs | None = None,
    output_format: str = BATCH,
) -> Selected:
    """Select every article of one batch file, chunk by chunk; write the output (and the report), or nothing.

    The output is the selected batch, or with ``output_format`` ``"dataset"`` the dataset as Parquet
    (:mod:`selection_engine.dataset`; the ``dataset`` extra), by default ``<stem>_selected.parquet`` beside the input.

    ``map_jobs`` runs the chunks elsewhere (on ``workers``; they then write part files), by default here,
    in order. With ``evidence_rows``, the result has the table rows of as many articles and the first close calls.

    Raises:
        InvalidBatchError: the first problem of the batch, in one line naming the place.
        InputChangedError: the input changed during the run.
        MissingExtraError: a dataset is asked for and pyarrow is not installed.
    """
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}, got {output_format!r}")
    dataset = output_format == DATASET
    if dataset:
        require_dataset_extra()
    inp = location(input_path, storage_options)
    wanted = None if output_path is None else location(output_path, storage_options, "output")
    out = resolve_selected_path(inp, wanted, output_format=output_format)
    report = resolve_report_path(
        inp, out, None if report_path is None else location(report_path, storage_options, "report")
    )
    plan = plan_batch(inp, workers, chunk_articles)
    shown = evidence_rows is not None
    table_rows = max(evidence_rows or 0, 0)
    fmt = plan.format
    envelope = (b"", b"") if dataset else fmt.envelope_parts(plan.envelope, plan.layout.articles > 0)
    joiner = _Joiner(out, report, dataset, envelope, b"" if dataset else fmt.separator)
    summary = sc.summarize(())
    found: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    jobs: list[ChunkJob] = []
    try:
        parts = joiner.token if map_jobs is not None else None  # (an object's chunks come back: plan_jobs)
        jobs = plan_jobs(plan, out, report, table_rows, MAX_CLOSEST_CALLS if shown else 0, parts, dataset)
        for job, selected in zip(jobs, map_jobs(jobs) if map_jobs else map(select_job, jobs), strict=True):
            joiner.add(selected, job)
            selected.output = selected.report = None  # written: not held while the next chunk is selected
            summary = sc.merge_summaries((summary, selected.summary))
            if selected.rows or selected.close_calls:
                found.append((selected.rows, selected.close_calls))
            if progress is not None:
                progress(selected.chunk.stop, plan.layout.articles)
        sha256 = joiner.complete()
    finally:
        joiner.discard()
        discard_parts(jobs)
    evidence = merge_evidence(found, table_rows) if shown else None
    return Selected(
        inp, plan.sha256, plan.identity.size, out, sha256, joiner.size, report, summary, len(jobs), evidence
    )
