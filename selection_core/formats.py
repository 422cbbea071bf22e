"""The two batch formats, JSON (``{"articles": [...]}``) and JSON Lines (one article per line), as one interface.

A run of consecutive articles (:class:`~selection_core.layout.Run`) is read as
``run_prefix + its bytes + run_suffix``, parsed and validated by ``parse_run``, and
written back by ``render`` (runs rendered separately join with ``separator``;
the batch is ``head + runs + tail``, :meth:`BatchFormat.envelope_parts`). The
format of a file is told by its name (:func:`format_of`): ``.jsonl`` is JSON
Lines, anything else a JSON batch, as the command line and the flows have always
read it.

Where the formats differ, by nature:

* a JSON batch has a root (the *envelope*: every key beside ``articles``), which
  is written back around the articles; a JSON Lines file has none;
* a JSON batch's refusal names the place in the whole document as the
  whole-document parse words it (line, column and character, or
  ``$.articles[i]``), so a run's refusal is restated for the whole file
  (``restate_refusal``); a JSON Lines refusal names its line, which a run already
  knows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .batch import ARTICLE_SEPARATOR, envelope_parts, parse_batch, render_articles
from .errors import InvalidBatchError
from .jsonl import is_jsonl, parse_lines, render_lines
from .layout import RUN_PREFIX, RUN_SUFFIX, Run

Articles = list[dict[str, Any]]


def _parse_json_run(data: bytes, source: str, run: Run) -> Articles:
    articles: Articles = parse_batch(data, f"{source} (articles {run.start}..{run.stop - 1})")["articles"]
    return articles


def _parse_lines_run(data: bytes, source: str, run: Run) -> Articles:
    return parse_lines(data, source, run.start + 1, run.begin)


def _json_envelope(envelope: dict[str, Any], any_articles: bool) -> tuple[bytes, bytes]:
    return envelope_parts(envelope, any_articles)


def _no_envelope(_envelope: dict[str, Any], _any_articles: bool) -> tuple[bytes, bytes]:
    return b"", b""


@dataclass(frozen=True)
class BatchFormat:
    """How a batch format reads and writes runs of articles (see the module docstring)."""

    name: str
    suffix: str
    run_prefix: bytes
    run_suffix: bytes
    separator: bytes
    restate_refusal: bool
    parse: Callable[[bytes, str, Run], Articles]
    render: Callable[[Sequence[dict[str, Any]]], bytes]
    envelope: Callable[[dict[str, Any], bool], tuple[bytes, bytes]]

    def parse_run(self, data: bytes, source: str, run: Run) -> Articles:
        """The validated articles of ``run`` (``data`` wrapped in ``run_prefix``/``run_suffix``).

        Raises:
            InvalidBatchError: the run is not valid, or does not hold the articles it was found to hold.
        """
        articles = self.parse(data, source, run)
        if len(articles) != len(run):
            raise InvalidBatchError(f"{source}: articles {run.start}..{run.stop - 1} are not where they were found")
        return articles

    def envelope_parts(self, envelope: dict[str, Any], any_articles: bool) -> tuple[bytes, bytes]:
        """The bytes written before and after the articles."""
        return self.envelope(envelope, any_articles)


#: The JSON batch: ``{"articles": [...], ...}``, written with 2-space indentation.
JSON_BATCH: Final[BatchFormat] = BatchFormat(
    name="JSON",
    suffix=".json",
    run_prefix=RUN_PREFIX,
    run_suffix=RUN_SUFFIX,
    separator=ARTICLE_SEPARATOR,
    restate_refusal=True,
    parse=_parse_json_run,
    render=render_articles,
    envelope=_json_envelope,
)

#: JSON Lines: one compact article object per line.
JSON_LINES: Final[BatchFormat] = BatchFormat(
    name="JSON Lines",
    suffix=".jsonl",
    run_prefix=b"",
    run_suffix=b"",
    separator=b"",
    restate_refusal=False,
    parse=_parse_lines_run,
    render=render_lines,
    envelope=_no_envelope,
)

FORMATS: Final[dict[str, BatchFormat]] = {f.name: f for f in (JSON_BATCH, JSON_LINES)}


def format_of(name: str) -> BatchFormat:
    """The format of a batch file of this name.

    >>> format_of("crawl_extracted.jsonl").name, format_of("crawl_extracted.json").name
    ('JSON Lines', 'JSON')
    """
    return JSON_LINES if is_jsonl(name) else JSON_BATCH
