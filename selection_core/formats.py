"""The two batch formats, JSON and JSON Lines, as one interface: read, parse and render chunks of articles.

A chunk is parsed as ``chunk_prefix + its bytes + chunk_suffix``; chunks rendered separately join with
``separator``, and a batch is ``head + chunks + tail`` (``envelope_parts``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .batch import ARTICLE_SEPARATOR, envelope_parts, parse_chunk, render_articles
from .jsonl import is_jsonl, parse_lines, render_lines
from .layout import CHUNK_PREFIX, CHUNK_SUFFIX, Chunk

Articles = list[dict[str, Any]]


def _parse_lines_chunk(data: bytes | bytearray, source: str, chunk: Chunk) -> Articles:
    return parse_lines(bytes(data), source, chunk.start + 1, chunk.begin)


def _no_envelope(_envelope: dict[str, Any], _any_articles: bool) -> tuple[bytes, bytes]:
    return b"", b""


@dataclass(frozen=True)
class BatchFormat:
    """How a batch format reads and writes chunks of articles (see the module docstring)."""

    name: str
    lines: bool
    chunk_prefix: bytes
    chunk_suffix: bytes
    separator: bytes
    parse: Callable[[bytes | bytearray, str, Chunk], Articles]
    render: Callable[[Sequence[dict[str, Any]]], bytes]
    envelope_parts: Callable[[dict[str, Any], bool], tuple[bytes, bytes]]


#: The JSON batch: ``{"articles": [...], ...}``, written with 2-space indentation.
JSON_BATCH: Final[BatchFormat] = BatchFormat(
    "JSON", False, CHUNK_PREFIX, CHUNK_SUFFIX, ARTICLE_SEPARATOR, parse_chunk, render_articles, envelope_parts
)

#: JSON Lines: one compact article object per line.
JSON_LINES: Final[BatchFormat] = BatchFormat(
    "JSON Lines", True, b"", b"", b"", _parse_lines_chunk, render_lines, _no_envelope
)

FORMATS: Final[dict[str, BatchFormat]] = {f.name: f for f in (JSON_BATCH, JSON_LINES)}


def format_of(name: str) -> BatchFormat:
    """The format of a batch file of this name."""
    return JSON_LINES if is_jsonl(name) else JSON_BATCH
