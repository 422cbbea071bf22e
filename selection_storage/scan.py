"""The first pass over a batch file: its SHA-256 and where its runs of articles lie, read block by block.

:func:`scan_file` reads the input once, from the first byte to the last, in
blocks of :data:`READ_BLOCK` bytes, hashing each block as it is read, and
delimits the articles of the root object's ``articles`` array with the same
lexer as :func:`selection_core.layout.scan_layout` (``value_end``, compiled when
built). It keeps no span per article: consecutive articles are grouped into
:class:`~selection_core.layout.Run`\\ s of at most ``max_run_bytes`` bytes (a
single larger article is a run of its own) and at most ``max_run_articles``
articles, so what it holds is one block, the article being delimited, the
bytes around the array (the envelope) and one small record per run. Memory
therefore grows with the largest single article (or envelope value), not with
the batch.

What it gives up on, it gives up on exactly where :func:`~selection_core.layout.scan_layout`
would (the tests compare the two on the same bytes): then the caller parses the
whole document, which gives the one-line message of an invalid batch.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from selection_core.layout import Run, RunLayout, value_end
from selection_storage.files import FileIdentity, InputChangedError, open_input, read_error

#: Bytes read (and hashed) at a time.
READ_BLOCK: Final[int] = 8 << 20

_WS_BYTES: Final[bytes] = b" \t\n\r"


class _GiveUp(Exception):
    """The articles cannot be delimited without parsing (the whole-document parse decides)."""


class _GiveUpInArray(_GiveUp):
    """The lexer gave up inside the ``articles`` array whose ``[`` is at ``opened``, after the articles of ``runs``."""

    def __init__(self, opened: int, runs: tuple[Run, ...]) -> None:
        super().__init__(opened)
        self.opened = opened
        self.runs = runs


@dataclass(frozen=True)
class ScannedFile:
    """What the first pass found: the file's version and SHA-256, its runs, and its envelope's bytes.

    ``layout`` is None when the articles could not be delimited; ``envelope`` is
    then empty, and ``partial`` says how far they were when the lexer gave up inside
    the ``articles`` array: the offset of its ``[`` and the runs delimited before
    (for :func:`selection_storage.refusal.prefix_refusal`). Otherwise ``envelope`` is
    the document with an empty ``articles`` array (:func:`selection_core.layout.envelope_bytes`).
    """

    identity: FileIdentity
    sha256: str
    layout: RunLayout | None
    envelope: bytes
    partial: tuple[int, tuple[Run, ...]] | None = None


class _Window:
    """The bytes of a file from ``base`` on, read block by block and hashed in order.

    ``keep`` is the first absolute offset still needed; a refill drops what lies
    before it.
    """

    def __init__(self, fh: BinaryIO, block: int) -> None:
        self._fh = fh
        self._block = block
        self.digest = hashlib.sha256()
        self.buf = b""
        self.base = 0
        self.eof = False
        self.read_bytes = 0

    def refill(self, keep: int) -> bool:
        """Read the next block (dropping bytes before ``keep``); False at the end of the file."""
        if self.eof:
            return False
        # Read at least as much as is pending (the value being delimited), so that a value of
        # any size costs a number of refills (copies and rescans) logarithmic in its size,
        # not linear: the work stays linear in the file's size.
        block = self._fh.read(max(self._block, self.base + len(self.buf) - keep))
        if not block:
            self.eof = True
            return False
        self.digest.update(block)
        self.read_bytes += len(block)
        drop = keep - self.base
        self.buf = self.buf[drop:] + block if drop > 0 else self.buf + block
        self.base = keep if drop > 0 else self.base
        return True

    def byte(self, pos: int, keep: int) -> int:
        """The byte at absolute offset ``pos``, or -1 past the end of the file."""
        while pos - self.base >= len(self.buf):
            if not self.refill(keep):
                return -1
        return self.buf[pos - self.base]

    def skip_ws(self, pos: int, keep: int) -> int:
        """The first offset at or after ``pos`` that is not JSON whitespace (or the end of the file)."""
        while True:
            rel = pos - self.base
            buf = self.buf
            n = len(buf)
            while rel < n and buf[rel] in _WS_BYTES:
                rel += 1
            pos = self.base + rel
            if rel < n or not self.refill(keep):
                return pos

    def value_end(self, pos: int, keep: int) -> int:
        """The offset just after the value starting at ``pos``; gives up when none can be delimited."""
        while True:
            rel = pos - self.base
            end = value_end(self.buf, rel) if rel < len(self.buf) else -1
            # A value that reaches the end of what was read may go on in the next block.
            if 0 <= end < len(self.buf) or (end >= 0 and self.eof):
                return self.base + end
            if not self.refill(keep):
                if end >= 0:
                    return self.base + end
                raise _GiveUp

    def bytes_between(self, start: int, stop: int) -> bytes:
        return self.buf[start - self.base : stop - self.base]

    def drain(self) -> None:
        """Read (and hash) the rest of the file, keeping nothing."""
        while self.refill(self.base + len(self.buf)):
            pass


class _RunCutter:
    """Groups consecutive articles into runs of bounded bytes and count."""

    def __init__(self, max_bytes: int, max_articles: int | None) -> None:
        self._max_bytes = max_bytes
        self._max_articles = max_articles
        self.runs: list[Run] = []
        self.count = 0
        self._start = 0
        self._begin = -1
        self._end = -1

    def add(self, begin: int, end: int) -> None:
        if self._begin >= 0 and (
            end - self._begin > self._max_bytes
            or (self._max_articles is not None and self.count - self._start >= self._max_articles)
        ):
            self.close()
        if self._begin < 0:
            self._start, self._begin = self.count, begin
        self._end = end
        self.count += 1

    def close(self) -> None:
        if self._begin >= 0:
            self.runs.append(Run(self._start, self.count, self._begin, self._end))
            self._begin = -1


def _key(w: _Window, pos: int, keep: int) -> tuple[bytes, int]:
    """The key string starting at ``pos`` (its text when spelled with escapes) and the offset after it."""
    if w.byte(pos, keep) != 0x22:  # '"'
        raise _GiveUp
    end = w.value_end(pos, keep)
    key = w.bytes_between(pos, end)
    if b"\\" in key:  # spelled with escapes: what it says decides
        try:
            key = b'"articles"' if json.loads(key) == "articles" else b'"other"'
        except ValueError:
            raise _GiveUp from None
    return key, end


def _articles(w: _Window, pos: int, cutter: _RunCutter) -> int:
    """Delimit the articles of the array whose ``[`` is at ``pos``; the offset of its ``]``."""
    p = w.skip_ws(pos + 1, pos)
    if w.byte(p, pos) == 0x5D:  # ']'
        return p
    while True:
        end = w.value_end(p, p)
        cutter.add(p, end)
        p = w.skip_ws(end, end)
        c = w.byte(p, p)
        if c == 0x2C:  # ','
            p = w.skip_ws(p + 1, p + 1)
            continue
        if c == 0x5D:
            return p
        raise _GiveUp


def _scan(w: _Window, cutter: _RunCutter) -> tuple[RunLayout, bytes]:
    """Scan the root object as :func:`selection_core.layout.scan_layout` does; the layout and the envelope."""
    p = w.skip_ws(0, 0)
    if w.byte(p, 0) != 0x7B:  # '{'
        raise _GiveUp
    p = w.skip_ws(p + 1, 0)
    if w.byte(p, 0) == 0x7D:  # '}': no articles key
        raise _GiveUp
    head = b""
    opened = closed = -1
    keep = 0  # the bytes of the envelope are kept: before the array, then from its ']' on
    while True:
        key, p = _key(w, p, keep)
        p = w.skip_ws(p, keep)
        if w.byte(p, keep) != 0x3A:  # ':'
            raise _GiveUp
        p = w.skip_ws(p + 1, keep)
        if key == b'"articles"':
            if opened >= 0 or w.byte(p, keep) != 0x5B:  # a second articles key, or not an array
                raise _GiveUp
            opened = p
            head = w.bytes_between(0, p + 1)
            try:
                closed = _articles(w, p, cutter)
            except _GiveUp:
                cutter.close()
                raise _GiveUpInArray(opened, tuple(cutter.runs)) from None
            keep = closed
            p = closed + 1
        else:
            p = w.value_end(p, keep)
        p = w.skip_ws(p, keep)
        c = w.byte(p, keep)
        if c == 0x2C:
            p = w.skip_ws(p + 1, keep)
            continue
        if c == 0x7D:
            break
        raise _GiveUp
    if w.skip_ws(p + 1, keep) != w.base + len(w.buf) or not w.eof or opened < 0:
        raise _GiveUp
    cutter.close()
    tail = w.bytes_between(closed, p + 1) + w.bytes_between(p + 1, w.base + len(w.buf))
    return RunLayout(opened, closed, tuple(cutter.runs)), head + tail


def scan_file(
    path: Path, max_run_bytes: int, max_run_articles: int | None = None, block: int = READ_BLOCK
) -> ScannedFile:
    """Read the batch once: its SHA-256, its runs of articles and its envelope (see the module docstring).

    Raises:
        InvalidBatchError: the file cannot be read (missing, a directory, ...).
        InputChangedError: the file changed while it was read.
        ReadError: a transient read error.
    """
    if max_run_bytes < 1:
        raise ValueError(f"max_run_bytes must be at least 1, got {max_run_bytes}")
    return _read_through(path, block, lambda w: _scan(w, _RunCutter(max_run_bytes, max_run_articles)))


def _read_through(path: Path, block: int, find: Callable[[_Window], tuple[RunLayout, bytes]]) -> ScannedFile:
    """Open the input, ``find`` its layout through a window on it, read (and hash) the rest, check its version."""
    with open_input(path) as fh:
        try:
            identity = FileIdentity.of(os.fstat(fh.fileno()))
            w = _Window(fh, block)
            partial = None
            try:
                layout: RunLayout | None
                layout, envelope = find(w)
            except _GiveUp as gave_up:
                layout, envelope = None, b""
                if isinstance(gave_up, _GiveUpInArray):
                    partial = (gave_up.opened, gave_up.runs)
            w.drain()
        except OSError as exc:
            raise read_error(path, exc) from None
    if w.read_bytes != identity.size or FileIdentity.of(os.stat(path)) != identity:
        raise InputChangedError(f"{path}: the file changed while it was being read; run again once it is complete")
    return ScannedFile(identity, w.digest.hexdigest(), layout, envelope, partial)


def _line_runs(w: _Window, cutter: _RunCutter) -> RunLayout:
    """Delimit the lines of a JSON Lines file (each with its newline; the last one may have none)."""
    pos = 0
    while True:
        nl = w.buf.find(b"\n", pos - w.base)
        if nl >= 0:
            end = w.base + nl + 1
            cutter.add(pos, end)
            pos = end
        elif not w.refill(pos):
            if pos < w.base + len(w.buf):
                cutter.add(pos, w.base + len(w.buf))
            cutter.close()
            return RunLayout(-1, -1, tuple(cutter.runs))


def scan_lines(
    path: Path, max_run_bytes: int, max_run_articles: int | None = None, block: int = READ_BLOCK
) -> ScannedFile:
    """:func:`scan_file` for a JSON Lines batch: runs of whole lines (every line is an article), no envelope.

    ``open``/``close`` of the layout are -1: there is no array. A line that is not
    an article (a blank one, say) is found and refused, with its number, when its
    run is parsed.

    Raises:
        As :func:`scan_file`.
    """
    return _read_through(path, block, lambda w: (_line_runs(w, _RunCutter(max_run_bytes, max_run_articles)), b""))


def describe(scanned: ScannedFile) -> dict[str, Any]:
    """A short, JSON-able account of a scan (for logs and tests)."""
    layout = scanned.layout
    return {
        "sha256": scanned.sha256,
        "articles": None if layout is None else layout.articles,
        "runs": None if layout is None else len(layout.runs),
    }
