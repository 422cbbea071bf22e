"""A batch cut into chunks of consecutive articles (or pages), scored or extracted one chunk per task run.

The selection rule is per article and deterministic, so scoring a batch chunk by
chunk, in any order and on any worker, gives the same selections as scoring it
whole, as long as every article keeps its index in the batch. What happens:

1. :func:`plan_batch` (in the flow's process) reads the input once, block by
   block, hashing it and finding where its runs of consecutive articles lie
   (:func:`selection_storage.scan.scan_file`: at most :data:`RUN_BYTES` each),
   without parsing the articles or holding a span per article. It validates the
   rest of the document (the *envelope*). :func:`plan_jobs` then groups the runs
   into :class:`ChunkJob`\\ s (:func:`group_runs`, :func:`auto_chunk_size`; at most
   :data:`CHUNK_BYTES` each). A run in this process, one run after the other, is
   :func:`selection_storage.chunked_file.select_file`.
2. :func:`score_chunk` (on the chosen task runner, once per chunk) reads its
   own byte span of the input, parses and validates it in full, scores it,
   and writes its articles, rendered exactly as in a whole written batch, to a
   temporary *part* file beside the output (and its report lines beside the
   report). It returns only counts, the rows of the scores table and its first
   close calls (:mod:`selection_core.evidence`).
3. :func:`selection_storage.parts.assemble_parts` (in the flow's process) writes
   the envelope and the parts, in order, into the output's staged temporary file,
   with the SHA-256 of what it writes, and commits output and report as one group.

So nothing as large as an article crosses a process boundary or Prefect's API:
a task's parameter is a :class:`ChunkJob` (a path, byte offsets, part paths)
and its result a :class:`ChunkOutcome` (counts, at most ``table_rows`` rows and
at most ``close_calls`` close calls); the number of task runs grows with chunks, not with articles. Workers
must see the same files as the flow (one machine, or a shared file system).

Failures never leave a part behind: the flow removes every part of the run when
any step fails, and a part left by a killed run is a temporary file of the
output (its name carries the flow process's id), removed by the next write to
that output. Invalid input found by a worker is reported as the whole-document
parse reports it (:func:`refuse_as_whole`): the same one line, with the place
in the whole file.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import selection_core as sc
from selection_core.batch import check_start
from selection_core.evidence import MAX_CLOSEST_CALLS, close_call_entries
from selection_core.formats import FORMATS, JSON_BATCH, JSON_LINES, BatchFormat, format_of
from selection_core.layout import Run, RunLayout
from selection_storage.atomic import process_alive, temporary_name
from selection_storage.files import FileIdentity, read_input, read_span, sha256_bytes
from selection_storage.parts import discard_parts, render_articles_in_batches, write_part
from selection_storage.refusal import prefix_refusal, whole_file_refusal
from selection_storage.report import report_lines
from selection_storage.scan import scan_file, scan_lines

#: Chunks per worker when no chunk size is given: enough to even out uneven
#: chunks, few enough that the fixed cost of a task run, paid by the flow's own
#: process at every submission, stays small (see docs/performance.md).
CHUNKS_PER_WORKER: Final[int] = 4

#: Bounds of the automatic chunk size (articles).
MIN_AUTO_CHUNK_SIZE: Final[int] = 500
MAX_AUTO_CHUNK_SIZE: Final[int] = 25_000

#: Most bytes of input in one run of articles, the piece a batch is read, parsed, scored and
#: written in: parsed, a run takes a few times its bytes, so what a sequential run holds is a
#: small constant whatever the batch's size (measured: docs/performance.md, "Memory at any
#: batch size"). An article larger than this is a run of its own.
RUN_BYTES: Final[int] = 8 << 20

#: Most articles in one run: the smallest automatic chunk, so that runs can always be
#: grouped into chunks of the automatic size, and progress moves at least this often.
RUN_ARTICLES: Final[int] = MIN_AUTO_CHUNK_SIZE

#: Most bytes of input in one chunk of a parallel runner (several runs, or one larger article):
#: what one worker holds, parsed, is about five times this. Larger chunks would save task runs
#: (each costs the flow's process a submission) but not memory.
CHUNK_BYTES: Final[int] = 64 << 20

#: Builds the scores-table row of one article from the article and its selection.
RowBuilder = Callable[[dict[str, Any], sc.Selection], dict[str, Any]]


def chunk_bounds(n_articles: int, chunk_size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each chunk, in order; the last one may be shorter.

    >>> chunk_bounds(7, 3)
    [(0, 3), (3, 6), (6, 7)]
    >>> chunk_bounds(0, 3)
    []
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    return [(start, min(start + chunk_size, n_articles)) for start in range(0, n_articles, chunk_size)]


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
    """What the flow knows of a batch before it is scored: its format, the envelope and where its runs lie.

    ``layout`` is None when the articles of a JSON batch could not be delimited
    without parsing; the batch was then parsed whole and ``doc`` holds it, to be
    scored in one piece. (Only an invalid batch gets there in practice: the scan
    delimits every valid one. The lines of a JSON Lines batch are always delimited.)
    """

    path: Path
    identity: FileIdentity
    sha256: str
    size_bytes: int
    envelope: dict[str, Any]
    layout: RunLayout | None
    doc: dict[str, Any] | None = None
    format: BatchFormat = JSON_BATCH

    @property
    def article_count(self) -> int:
        if self.layout is not None:
            return self.layout.articles
        assert self.doc is not None
        return len(self.doc["articles"])


def refuse_as_whole(plan: BatchPlan) -> None:
    """Raise the refusal of the whole batch, when a run of it was refused (then re-raise the run's own).

    Every refusal of a run goes through here, so a user gets the same one line
    whichever runner ran and however the batch was cut: for a JSON batch, the
    whole-document parse's (with the place in the whole file); a JSON Lines run's
    refusal already names its line in the file.
    """
    if plan.format.restate_refusal and plan.layout is not None:
        whole_file_refusal(plan.path, plan.identity, plan.layout)  # one run at a time, never the whole batch


def plan_batch(input_path: str | os.PathLike[str], max_run_articles: int | None = None) -> BatchPlan:
    """Hash the batch, find where its runs of articles lie, and validate everything else, reading it once.

    The runs are at most :data:`RUN_BYTES` bytes and ``max_run_articles`` (default
    :data:`RUN_ARTICLES`) articles each (:func:`selection_storage.scan.scan_file`).
    When the articles cannot be delimited without parsing, or the envelope is
    not valid, the whole-document parse decides (and gives the message); a valid
    batch is then planned to be scored in one piece (``plan.doc`` is set).

    Raises:
        InvalidBatchError: the batch is not valid (as the whole-document parse reports it).
        ReadError: a transient read error.
    """
    path = Path(input_path)
    fmt = format_of(path.name)
    if fmt is JSON_LINES:
        lines = scan_lines(path, RUN_BYTES, max_run_articles or RUN_ARTICLES)
        return BatchPlan(path, lines.identity, lines.sha256, lines.identity.size, {}, lines.layout, None, fmt)
    scanned = scan_file(path, RUN_BYTES, max_run_articles or RUN_ARTICLES)
    if scanned.identity.size == 0:
        check_start(b"", str(path))  # refuses the empty file, in parse_batch's words
    envelope = _parse_envelope(path, scanned.envelope) if scanned.layout is not None else None
    if scanned.layout is not None and envelope is not None:
        return BatchPlan(path, scanned.identity, scanned.sha256, scanned.identity.size, envelope, scanned.layout)
    if scanned.layout is not None:  # an invalid envelope: the whole batch's refusal, one run at a time
        whole_file_refusal(path, scanned.identity, scanned.layout)
    if scanned.partial is not None:  # the lexer gave up inside the articles: the refusal from there on
        prefix_refusal(path, scanned.identity, *scanned.partial)
    data = read_input(path)
    doc = sc.parse_batch(data, str(path))
    envelope = {k: ([] if k == "articles" else v) for k, v in doc.items()}
    # the SHA-256 of the bytes this document was parsed from
    return BatchPlan(path, scanned.identity, sha256_bytes(data), scanned.identity.size, envelope, None, doc)


def _parse_envelope(path: Path, envelope_data: bytes) -> dict[str, Any] | None:
    """The validated envelope, or None when only the whole-document parse can decide."""
    try:
        return sc.parse_batch(envelope_data, str(path))
    except sc.InvalidBatchError:
        return None


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
        "close_calls",
        "format_name",
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
        close_calls: int = MAX_CLOSEST_CALLS,
        format_name: str = JSON_BATCH.name,
    ) -> None:
        self.input_path = input_path
        self.format_name = format_name
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
        self.close_calls = close_calls

    def __repr__(self) -> str:
        return f"ChunkJob(start={self.start}, stop={self.stop}, bytes={self.span[0]}..{self.span[1]})"

    def __dask_tokenize__(self) -> tuple[str, str, int, int]:
        # With pure=True (prefect-dask's choice) Dask names a task by hashing its
        # arguments unless they name themselves. Each submission also carries its
        # own task-run id, so two never share a key.
        return ("content-selection-chunk", self.output_part, self.start, self.stop)


class ChunkOutcome:
    """What a scored chunk sends back: its counts, its table rows, its first close calls, where its parts are."""

    __slots__ = ("close_calls", "output_part", "report_part", "rows", "start", "stop", "summary")

    def __init__(
        self,
        start: int,
        stop: int,
        summary: sc.Summary,
        rows: list[dict[str, Any]],
        output_part: str,
        report_part: str | None,
        close_calls: list[dict[str, Any]] | None = None,
    ) -> None:
        self.start = start
        self.stop = stop
        self.summary = summary
        self.rows = rows
        self.output_part = output_part
        self.report_part = report_part
        self.close_calls = [] if close_calls is None else close_calls

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
    close_calls: int = MAX_CLOSEST_CALLS,
) -> list[ChunkJob]:
    """The jobs of a planned batch, in order, ``chunk_size`` articles each.

    Each chunk sends back its rows of the first ``table_rows`` articles of the batch
    and at most ``close_calls`` close calls (its first ones): what the artifacts need
    of it, however the batch is cut.

    Part files are named as temporary files of the output (and report) owned
    by the flow's process, ``owner_pid``: one random token per run, then the
    chunk's number.
    """
    if plan.layout is None:
        raise ValueError("a batch whose articles were not delimited is scored in one piece")
    if any(len(run) > chunk_size for run in plan.layout.runs):
        raise ValueError(f"chunks of {chunk_size} articles need a plan made with run_articles <= {chunk_size}")
    pid = os.getpid() if owner_pid is None else owner_pid
    token = secrets.token_hex(4)
    jobs = []
    for number, run in enumerate(group_runs(plan.layout.runs, chunk_size, CHUNK_BYTES)):
        part = f"{token}{number:08x}"
        jobs.append(
            ChunkJob(
                input_path=str(plan.path),
                identity=plan.identity,
                start=run.start,
                stop=run.stop,
                span=(run.begin, run.end),
                output_path=str(output_path),
                report_path=None if report_path is None else str(report_path),
                output_part=str(temporary_name(output_path, pid, part)),
                report_part=None if report_path is None else str(temporary_name(report_path, pid, part)),
                table_rows=table_rows,
                owner_pid=pid,
                owner_host=socket.gethostname(),
                close_calls=close_calls,
                format_name=plan.format.name,
            )
        )
    return jobs


def group_runs(runs: Sequence[Run], max_articles: int, max_bytes: int) -> list[Run]:
    """Consecutive runs joined into runs of at most ``max_articles`` articles and ``max_bytes`` bytes.

    A run that is larger on its own stays as it is.

    >>> group_runs([Run(0, 2, 0, 10), Run(2, 4, 11, 20), Run(4, 5, 21, 40)], 4, 100)
    [Run(start=0, stop=4, begin=0, end=20), Run(start=4, stop=5, begin=21, end=40)]
    """
    if max_articles < 1:
        raise ValueError(f"max_articles must be at least 1, got {max_articles}")
    grouped: list[Run] = []
    for run in runs:
        last = grouped[-1] if grouped else None
        if last is not None and run.stop - last.start <= max_articles and run.end - last.begin <= max_bytes:
            grouped[-1] = Run(last.start, run.stop, last.begin, run.end)
        else:
            grouped.append(run)
    return grouped


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


@dataclass
class ScoredRun:
    """A run of articles scored: its rendered articles, report lines, counts, table rows and first close calls.

    ``output`` and ``report`` are produced as they are consumed (written), so a
    run's rendered bytes are never held beside it twice.
    """

    output: Iterable[bytes]
    report: Iterable[bytes] | None
    summary: sc.Summary
    rows: list[dict[str, Any]]
    close_calls: list[dict[str, Any]]


def score_run(
    data: bytes | bytearray,
    path: Path,
    run: Run,
    fmt: BatchFormat,
    row: RowBuilder,
    table_rows: int,
    close_calls: int,
    with_report: bool,
) -> ScoredRun:
    """Parse, validate and score the articles of ``run``, from their bytes.

    ``data`` is the run's bytes wrapped in the format's ``run_prefix``/``run_suffix``. The rows
    of the scores table are built for the articles among the batch's first
    ``table_rows``, and at most ``close_calls`` close calls are kept.

    Raises:
        InvalidBatchError: the run is not valid (:func:`refuse_as_whole` gives the whole batch's message).
    """
    start, stop = run.start, run.stop
    articles = fmt.parse_run(cast(bytes, data), str(path), run)
    selections = [sc.select_article(article, start + offset) for offset, article in enumerate(articles)]
    sc.apply_selections({"articles": articles}, selections, start=start)
    shown = max(0, min(stop, table_rows) - start)
    return ScoredRun(
        output=render_articles_in_batches(articles, fmt),
        report=report_lines(articles, selections) if with_report else None,
        summary=sc.summarize(selections),
        rows=[row(articles[i], selections[i]) for i in range(shown)],
        close_calls=close_call_entries(articles, selections, close_calls),
    )


def score_chunk(chunk: ChunkJob, row: RowBuilder) -> ChunkOutcome:
    """Read, validate, score and write one chunk of a batch with the deterministic core.

    Args:
        chunk: Which articles, where they lie in the input, where to write them.
        row: Builds the scores-table row of an article (for the first ``chunk.table_rows``
            articles of the batch), here where the article is, so that only rows travel back.

    Returns:
        The chunk's counts, its rows of the scores table, its first close calls, and its part files.

    Raises:
        InputChangedError: the input is no longer the planned version.
        InvalidBatchError: the chunk is not valid (:func:`refuse_as_whole` gives the
            whole-document message).
        ReadError, WriteError, OutputPathError: as reading and writing files.
    """
    path = Path(chunk.input_path)
    fmt = FORMATS[chunk.format_name]
    data = read_span(path, chunk.identity, chunk.span[0], chunk.span[1], fmt.run_prefix, fmt.run_suffix)
    with_report = chunk.report_path is not None and chunk.report_part is not None
    run = Run(chunk.start, chunk.stop, chunk.span[0], chunk.span[1])
    scored = score_run(data, path, run, fmt, row, chunk.table_rows, chunk.close_calls, with_report)
    del data
    if scored.report is not None and chunk.report_path is not None and chunk.report_part is not None:
        write_part(Path(chunk.report_path), chunk.report_part, scored.report)
    write_part(Path(chunk.output_path), chunk.output_part, scored.output)
    _drop_parts_of_a_gone_run(chunk)
    return ChunkOutcome(
        chunk.start,
        chunk.stop,
        scored.summary,
        scored.rows,
        chunk.output_part,
        chunk.report_part,
        scored.close_calls,
    )
