"""A WARC's work files beside its output while it is not done: its commits (each a piece of the output, and the
progress up to it) and its count of tries; and the pieces a WARC's stream is cut into (docs/scaling.md, "Commits").
"""

from __future__ import annotations

import dataclasses
import os
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

import orjson

from selection_extraction.extracted import NO_STATS, ExtractionStats
from selection_extraction.pages import Page, warc_refusals
from selection_extraction.warc import StreamedPage, WarcCursor, WarcStream
from selection_storage.files import Version
from selection_storage.stores import Location, store, write_atomic
from selection_storage.stores.conditional import remove_if

#: Most pages, and most seconds of work, between two commits of a WARC's progress; the pages can be set on the
#: workers by :data:`COMMIT_PAGES_VARIABLE`.
COMMIT_PAGES: Final[int] = 300
COMMIT_SECONDS: Final[float] = 60.0
COMMIT_PAGES_VARIABLE: Final[str] = "CONTENT_SELECTION_COMMIT_PAGES"

#: How a commit's name ends, after the output's name and its number.
_COMMIT_SUFFIX: Final[str] = ".commit"

#: How the object counting a WARC's tries is named, after the output's name.
_TRIES_SUFFIX: Final[str] = ".tries"


@dataclass
class Progress:
    """Where a WARC's work stands: the read's cursor, the articles and counts so far, the commits made."""

    cursor: WarcCursor | None = None
    articles: int = 0
    stats: ExtractionStats = NO_STATS
    commits: int = 0
    begin: int = 0  # the byte offset of the next article in the extracted batch a run in one go would read


def work_files(output_name: str, names: Iterable[str]) -> list[str]:
    """The names among ``names`` (a folder's) of the commits and the count of tries of the WARC whose output is
    ``output_name``, in order: what is left of its work while it is not done."""
    return sorted(name for name in names if work_file_output(name) == output_name)


def work_file_output(name: str) -> str | None:
    """The output name whose commit or count of tries ``name`` is (None: neither)."""
    if name.endswith(_TRIES_SUFFIX):
        return name[: -len(_TRIES_SUFFIX)]
    stem, dot, number = name.removesuffix(_COMMIT_SUFFIX).rpartition(".")
    return stem if name.endswith(_COMMIT_SUFFIX) and dot and number.isdigit() else None


class Tries:
    """A WARC's tries in one run, counted in the store beside its output: a try is one start by a worker."""

    def __init__(self, target: Location, run: str) -> None:
        self.where = target.with_name(target.name + _TRIES_SUFFIX)
        self.run = run

    def start(self, committed: int) -> tuple[int, int]:
        """Count one more try of the WARC in this run, ``committed`` pieces being there: how many tries there were,
        and the deaths in a row before it (the tries before it that found no piece that the one before had not)."""
        tries = deaths = 0
        if store(self.where).kind() == "file":
            try:
                with store(self.where).open() as fh:
                    previous = orjson.loads(fh.read())
                if previous.get("run") == self.run:
                    tries = int(previous["tries"])
                    deaths = int(previous["deaths"]) + 1 if committed <= int(previous["committed"]) else 0
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                tries = deaths = 0
        record = {"run": self.run, "tries": tries + 1, "deaths": deaths, "committed": committed}
        write_atomic(self.where, orjson.dumps(record))
        return tries + 1, deaths

    def remove(self, fence: Callable[[], None]) -> None:
        """Remove the count (as listed before the fence is checked, and only while it is that version)."""
        version = store(self.where).listed_version()
        fence()
        if version is not None:
            remove_if(self.where, version)


class Commits:
    """A WARC's commits beside its output, valid for one version of the WARC and one fingerprint."""

    def __init__(self, target: Location, version: Version, fingerprint: str) -> None:
        self.target = target
        self.identity = {"input_version": {"size": version.size, "tag": version.tag}, "fingerprint": fingerprint}

    def _name(self, number: int) -> Location:
        return self.target.with_name(f"{self.target.name}.{number:05d}{_COMMIT_SUFFIX}")

    def listed(self) -> dict[str, Version]:
        """This WARC's commits (any version) and their versions, by name, in order."""
        listed = store(self.target.parent).listed()
        return {name: listed[name] for name in work_files(self.target.name, listed) if name.endswith(_COMMIT_SUFFIX)}

    def load(self, pieces: BinaryIO) -> tuple[Progress, dict[str, Version]]:
        """The progress of the valid commits (numbered from 0, without a gap), their pieces appended to ``pieces``;
        and the others, to be removed (:meth:`remove`) once the fence is checked."""
        progress = Progress()
        listed = self.listed()
        names = list(listed)
        for number, name in enumerate(names):
            where = self.target.with_name(name)
            if name != self._name(number).name:
                break
            try:
                with store(where).open() as fh:
                    head = orjson.loads(fh.readline())
                    if {k: head.get(k) for k in self.identity} != self.identity:
                        break
                    if head.get("start", 0) != _cursor_json(progress.cursor):  # two workers' pieces, cut elsewhere
                        break
                    piece = zlib.decompress(fh.read())
            except (orjson.JSONDecodeError, zlib.error, KeyError, TypeError, ValueError):
                break
            pieces.write(piece)
            progress = Progress(
                WarcCursor.from_json(head["cursor"]),
                int(head["articles"]),
                ExtractionStats(**{**head["stats"], "network_attempts": tuple(head["stats"]["network_attempts"])}),
                number + 1,
                int(head["begin"]),
            )
        return progress, {name: listed[name] for name in names[progress.commits :]}

    def commit(self, start: WarcCursor | None, progress: Progress, piece: bytes) -> None:
        """Commit ``piece`` (the articles from the cursor ``start`` to ``progress``'s, selected) with ``progress``
        (complete or absent). A commit names the cursor it starts from, so that the commits of two workers doing the
        WARC at once (a stale task of a killed run), whose pieces may be cut at other pages, never chain."""
        assert progress.cursor is not None
        head = {
            **self.identity,
            "start": _cursor_json(start),
            "cursor": progress.cursor.to_json(),
            "articles": progress.articles,
            "stats": dataclasses.asdict(progress.stats),
            "begin": progress.begin,
        }
        write_atomic(self._name(progress.commits - 1), [orjson.dumps(head) + b"\n", zlib.compress(piece, 1)])

    def remove(self, fence: Callable[[], None], listed: dict[str, Version] | None = None) -> None:
        """Remove the commits (once the WARC's output and record are written), or those ``listed``: each only while
        it is the version listed before the fence was checked (a process frozen between its check and a removal
        never removes what another run wrote since)."""
        listed = self.listed() if listed is None else listed
        fence()
        for name, version in listed.items():
            remove_if(self.target.with_name(name), version)


def _cursor_json(cursor: WarcCursor | None) -> dict[str, Any] | None:
    return cursor.to_json() if cursor is not None else None


def _commit_pages() -> int:
    try:
        return max(1, int(os.environ.get(COMMIT_PAGES_VARIABLE, COMMIT_PAGES)))
    except ValueError:
        return COMMIT_PAGES


class Piece:
    """The next pages of a stream, at most :data:`COMMIT_PAGES` or :data:`COMMIT_SECONDS` seconds of them, as
    ``(page, payload)``; once read, ``after`` is the cursor after its last page, and ``last`` whether the stream
    ended in it."""

    def __init__(self, stream: WarcStream, pages: Iterator[StreamedPage], after: WarcCursor) -> None:
        self.stream, self.pages, self.after, self.last = stream, pages, after, False

    def __iter__(self) -> Iterator[tuple[Page, Any]]:
        deadline, most, shown = time.monotonic() + COMMIT_SECONDS, _commit_pages(), self.stream.shown
        with warc_refusals(shown):  # not a WARC, or unreadable: its pages cannot be used
            for count, item in enumerate(self.pages, 1):
                self.after = item.after
                yield Page(item.id, item.url, shown, self.stream.path, item.charset, item.ref), item.payload
                if count >= most or time.monotonic() >= deadline:
                    return
        self.last = True
