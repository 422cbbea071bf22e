"""The part files of a batch scored in chunks, and their assembly into the output (and the report).

A chunk's articles (and report lines) are written to a *part*, a temporary file
of the output (see :mod:`selection_storage.atomic`), by :func:`write_part`.
:class:`PartJoiner` joins the parts, in article order, into the output's staged
file between the envelope's head and tail, hashing what it writes;
:func:`assemble_parts` completes it (or joins the parts again) and commits the
report then the output. :func:`discard_parts` removes parts whatever happened.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from selection_core.formats import BatchFormat
from selection_storage.atomic import StagedFile, clean_stale_temporaries, commit_in_order
from selection_storage.batch import WrittenFile

if TYPE_CHECKING:
    from selection_storage.chunks import ChunkOutcome

#: Bytes copied at a time when parts are put together.
_COPY_BLOCK: Final[int] = 8 << 20


class HasParts(Protocol):
    """Anything that names a chunk's part files (a job, or its outcome)."""

    @property
    def output_part(self) -> str: ...

    @property
    def report_part(self) -> str | None: ...


def write_part(target: Path, part: str, pieces: Iterable[bytes]) -> None:
    """Write a part file of ``target`` (named in errors); a part written before is replaced."""
    path = Path(part)
    try:  # a rerun of the same chunk (a retry, a worker lost by Dask) starts afresh
        os.unlink(path)
    except FileNotFoundError:
        pass
    StagedFile(target, path, durable=False).write_all(pieces)  # the assembled file is fsynced


def render_articles_in_batches(
    articles: Sequence[dict[str, Any]], fmt: BatchFormat, per_write: int = 256
) -> Iterable[bytes]:
    """The articles rendered as in a written batch of ``fmt`` (separators between them), ``per_write`` at a time."""
    for i in range(0, len(articles), per_write):
        yield (fmt.separator if i else b"") + fmt.render(articles[i : i + per_write])


def discard_parts(chunks: Iterable[HasParts]) -> None:
    """Remove every part file of these jobs (or outcomes) that exists (never raises)."""
    for chunk in chunks:
        for part in (chunk.output_part, chunk.report_part):
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
    chunks; :func:`assemble_parts` then completes and commits it. The first
    failure discards its staged files and makes it unusable (``usable``
    becomes False); :func:`assemble_parts` then joins the parts again itself.
    The parts are never removed here.
    """

    def __init__(
        self,
        envelope: dict[str, Any],
        any_articles: bool,
        output_path: Path,
        report_path: Path | None,
        fmt: BatchFormat,
    ):
        for target in (output_path, report_path):
            if target is not None:
                clean_stale_temporaries(target)
        self.output_path = output_path
        self._head, self._tail = fmt.envelope_parts(envelope, any_articles)
        self._separator = fmt.separator
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
                self._append(self._separator)
            self._size += _copy_part(outcome.output_part, self._output, self._digest)
            self._parts += 1
        except Exception as exc:  # noqa: BLE001 - kept, and the parts are joined again by assemble_parts
            self._fail(exc)

    def write_run(self, output: Iterable[bytes], report: Iterable[bytes] | None) -> None:
        """Append the next run's rendered articles (and report lines) directly, without a part file.

        What a run in one process does (:func:`selection_storage.chunked_file.select_file`).
        Raises the first error met (the staged files are then removed).
        """
        if not self.usable:
            raise RuntimeError("this joiner failed earlier") from self.error
        try:
            if self._report is not None:
                assert report is not None
                for piece in report:
                    self._report.write(piece)
            if self._parts:
                self._append(self._separator)
            for piece in output:
                self._append(piece)
            self._parts += 1
        except BaseException as exc:
            self._fail(exc)
            raise

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
        commit_in_order(self._files)
        return WrittenFile(Path(self.output_path), self._digest.hexdigest(), self._size)

    def discard(self) -> None:
        """Remove the staged files (never raises)."""
        self._fail(RuntimeError("discarded"))


def join_parts(
    envelope: dict[str, Any],
    outcomes: Sequence[ChunkOutcome],
    output_path: Path,
    report_path: Path | None,
    fmt: BatchFormat,
) -> PartJoiner:
    """A joiner holding every part of ``outcomes``, in order.

    Raises:
        The first error met while joining (the joiner's staged files are removed).
    """
    joiner = PartJoiner(envelope, any(len(o) for o in outcomes), output_path, report_path, fmt)
    for outcome in outcomes:
        joiner.add(outcome)
        if not joiner.usable:
            assert joiner.error is not None
            raise joiner.error
    return joiner


def assemble_parts(
    envelope: dict[str, Any],
    outcomes: Sequence[ChunkOutcome],
    output_path: Path,
    report_path: Path | None,
    fmt: BatchFormat,
    joined: PartJoiner | None = None,
) -> WrittenFile:
    """Write the selected batch (and the report) from the chunks' parts, atomically and as one group.

    Completes ``joined`` when it holds every part, else joins the parts here
    (:func:`join_parts`; a retry after a transient error always does). The report
    is renamed first, so that where the output exists, its report does too; a
    failure before the renames leaves neither. The parts are removed once both
    files are in place.

    Returns:
        The written output, with the SHA-256 of its bytes.
    """
    if joined is None or not joined.usable:
        joined = join_parts(envelope, outcomes, output_path, report_path, fmt)
    written = joined.complete()
    discard_parts(outcomes)
    return written
