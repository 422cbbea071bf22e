"""Where a run may read and write: resolve paths and keep them inside the data root."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from selection_core.dataset import BATCH, DATASET
from selection_core.errors import OutputPathError, UnsafePathError
from selection_core.jsonl import is_jsonl
from selection_storage.files import read_error
from selection_storage.stores import Location, ObjectPath, beside, is_url, local_text, location, store

EXTRACTED_SUFFIX: Final[str] = "_extracted.json"
SELECTED_SUFFIX: Final[str] = "_selected.json"
EXTRACTED_LINES_SUFFIX: Final[str] = "_extracted.jsonl"
SELECTED_LINES_SUFFIX: Final[str] = "_selected.jsonl"
#: How a dataset's name ends (Parquet), and the default name of a batch's dataset.
PARQUET_SUFFIX: Final[str] = ".parquet"
SELECTED_DATASET_SUFFIX: Final[str] = "_selected" + PARQUET_SUFFIX

#: Environment variable naming the directory that every path of a run must stay inside.
DATA_ROOT_ENV: Final[str] = "CONTENT_SELECTION_DATA_ROOT"
#: How messages name the flows' ``data_root`` parameter.
DATA_ROOT_PARAMETER: Final[str] = "the data_root parameter"


def selected_path(input_path: str | os.PathLike[str] | Location, output_format: str = BATCH) -> Location:
    """``<stem>_selected.json`` beside the input (:func:`beside`: a web server's, in the current folder);
    ``<stem>_selected.jsonl`` for a JSON Lines batch; ``<stem>_selected.parquet`` for the dataset."""
    p = location(input_path)
    if output_format == DATASET:
        return beside(p, p.stem + SELECTED_DATASET_SUFFIX)
    return beside(p, f"{p.stem}{SELECTED_LINES_SUFFIX if is_jsonl(p.name) else SELECTED_SUFFIX}")


def resolve_selected_path(
    input_path: str | os.PathLike[str] | Location,
    output_path: str | os.PathLike[str] | Location | None = None,
    input_exists: bool = True,
    output_format: str = BATCH,
) -> Location:
    """:func:`resolve_output_path`, also refusing an output named for another format than the one written (the
    input's, or Parquet for the dataset), and first (with ``input_exists``) a local input that does not exist, so
    that the output's folder is not blamed."""
    if input_exists and isinstance(inp := location(input_path), Path):
        try:
            os.stat(inp.expanduser())
        except FileNotFoundError as exc:
            raise read_error(inp, exc) from None
        except OSError:  # a symbolic link loop, or unreadable: said when it is resolved or read
            pass
    out = resolve_output_path(input_path, output_path, output_format=output_format)
    suffix = out.suffix.lower()
    if output_format == DATASET:
        if suffix in (".json", ".jsonl"):
            raise OutputPathError(f"{out}: the dataset is written as Parquet; name the output *{PARQUET_SUFFIX}")
        return out
    if suffix == PARQUET_SUFFIX:
        raise OutputPathError(
            f"{out}: the selected batch is JSON, not Parquet; for Parquet give --format dataset (output_format dataset)"
        )
    lines = is_jsonl(location(input_path).name)
    if lines != is_jsonl(out.name) and out.suffix in (".json", ".jsonl"):
        kind, want = ("JSON Lines", ".jsonl") if lines else ("JSON", ".json")
        raise OutputPathError(f"{out}: the input is a {kind} batch, written back as {kind}; name the output *{want}")
    return out


def resolve_output_path(
    input_path: str | os.PathLike[str] | Location,
    output_path: str | os.PathLike[str] | Location | None = None,
    option: str = "--output",
    output_format: str = BATCH,
) -> Location:
    """Check (without writing) where the output will go, and return it; ``option`` names it in messages. An
    object in a store is checked only against the input: its bucket is checked by the upload.

    Raises:
        InvalidBatchError: the input path is a symbolic link loop.
        OutputPathError: the output is the input, a directory or a symlink loop, or its directory is unusable.
    """
    inp = location(input_path)
    out = selected_path(inp, output_format) if output_path is None else location(output_path, None, "output")
    store(out).check_output(store(inp), option)
    return out


def resolve_report_path(
    source: str | os.PathLike[str] | Location,
    output: Location,
    report: str | os.PathLike[str] | Location | None,
    option: str = "--report",
) -> Location | None:
    """:func:`resolve_output_path` for the report (None: no report), refusing the output's own path."""
    if report is None:
        return None
    checked = resolve_output_path(source, report, option)
    if store(checked).resolve() == store(output).resolve():
        raise OutputPathError(f"{checked}: the report path is the output path; choose another {option}")
    return checked


@dataclass(frozen=True)
class RunPaths:
    """The resolved, checked paths of one selection run (files, or objects in a store)."""

    input: Location
    output: Location
    report: Location | None
    data_root: Location | None
    output_format: str = BATCH


def configured_data_root(data_root: str | None = None) -> str | None:
    """The data root in force: the given one, else ``$CONTENT_SELECTION_DATA_ROOT``, else None (blank is none)."""
    if data_root is not None and data_root.strip():
        return data_root
    from_env = os.environ.get(DATA_ROOT_ENV, "")
    return from_env if from_env.strip() else None


@dataclass(frozen=True)
class DataRoot:
    """The data root in force, resolved, and what set it (``source``, as messages name it)."""

    path: Location
    source: str

    def confine(self, path: str | os.PathLike[str] | Location, what: str) -> Location:
        if isinstance(self.path, ObjectPath):
            return confine_object(path, self.path, what, self.source)
        if is_url(path):
            raise UnsafePathError(
                f"{what} path {str(path)!r} is in an object store, outside the data root {str(self.path)!r}; "
                f"only files under the data root are processed (change {self.source})"
            )
        return confine(path, self.path, what, self.source)


def data_root_in_force(
    data_root: str | None, option: str = DATA_ROOT_PARAMETER, storage_options: dict[str, Any] | None = None
) -> DataRoot | None:
    """The data root of a run, resolved: ``data_root`` (named ``option``), else ``$CONTENT_SELECTION_DATA_ROOT``;
    an ``UnsafePathError`` if it is not an existing directory. A URL is a prefix in a store (not checked here)."""
    root_text = configured_data_root(data_root)
    if root_text is None:
        return None
    source = option if data_root is not None and data_root.strip() else DATA_ROOT_ENV
    if is_url(root_text.strip()):
        return DataRoot(ObjectPath.parse(root_text.strip(), storage_options, "data root"), source)
    root = Path(local_text(root_text)).expanduser()
    try:
        resolved = root.resolve(strict=True)
    except (OSError, RuntimeError, ValueError) as exc:
        raise UnsafePathError(
            f"data root {str(root)!r} does not exist or cannot be resolved ({exc}); "
            f"point {source} at an existing directory"
        ) from None
    if not resolved.is_dir():
        raise UnsafePathError(f"data root {str(root)!r} is not a directory; point {source} at an existing directory")
    return DataRoot(resolved, source)


def confine(path: str | os.PathLike[str], root: Path, what: str, source: str) -> Path:
    """Resolve ``path`` (relative to ``root``, symlinks and ``..`` followed); an ``UnsafePathError`` if it is
    empty, malformed, or outside ``root``."""
    text = os.fspath(path)
    if not text.strip() or "\x00" in text:
        raise UnsafePathError(f"{what} path {text!r} is empty or malformed; give a file path")
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise UnsafePathError(f"{what} path {text!r} cannot be resolved ({exc})") from None
    if not resolved.is_relative_to(root):
        raise UnsafePathError(
            f"{what} path {text!r} resolves to {str(resolved)!r}, outside the data root "
            f"{str(root)!r}; only files under the data root are processed "
            f"(move the file there or change {source})"
        )
    return resolved


def confine_object(path: str | os.PathLike[str] | Location, root: ObjectPath, what: str, source: str) -> ObjectPath:
    """The object ``path`` names (a URL, or a key relative to ``root``); an ``UnsafePathError`` if it is in
    another bucket or store, under another prefix, or has ``.`` or ``..`` segments."""
    text = str(path)
    if not text.strip() or "\x00" in text:
        raise UnsafePathError(f"{what} path {text!r} is empty or malformed; give an object's URL")
    if is_url(path):
        candidate = location(path, root.options, what)
    elif os.path.isabs(local_text(text)):
        candidate = None
    else:
        candidate = root.joinpath(text, what)
    if candidate is None or not candidate.is_relative_to(root):
        raise UnsafePathError(
            f"{what} path {text!r} is outside the data root {str(root)!r}; only objects under the data root "
            f"are processed (move the object there or change {source})"
        )
    return candidate


def resolve_run_paths(
    input_path: str,
    output_path: str | None = None,
    report_path: str | None = None,
    data_root: str | None = None,
    require_data_root: bool = False,
    option: str = DATA_ROOT_PARAMETER,
    storage_options: dict[str, Any] | None = None,
    input_exists: bool = True,
    output_format: str = BATCH,
) -> RunPaths:
    """Resolve and check every path of a selection run before anything is read or written (``input_exists``:
    refuse a missing local input first; False when a step before the selection writes it; ``output_format``: the
    selected batch, or the dataset).

    Raises:
        InvalidBatchError: the input file does not exist (checked before the output's folder).
        UnsafePathError: a path leaves the data root, or ``require_data_root`` and none is configured.
        OutputPathError: the output or report location is refused.
    """
    root = data_root_in_force(data_root, option, storage_options)
    if root is None:
        if require_data_root:
            raise UnsafePathError(
                f"no data root is configured, and this run takes its path from an event; "
                f"set {DATA_ROOT_ENV} (or {option}) to the directory that holds the batches"
            )
        source = store(location(input_path, storage_options)).absolute()
        wanted = location(output_path, storage_options, "output") if output_path else None
        output = resolve_selected_path(source, wanted, input_exists, output_format)
        wanted_report = location(report_path, storage_options, "report") if report_path else None
        report = resolve_report_path(source, output, wanted_report)
        return RunPaths(source, output, report, None, output_format)

    source = root.confine(input_path, "input")
    wanted_output = root.confine(output_path, "output") if output_path else None
    # The default output is beside the input, and may be a symlink out of the root.
    output = root.confine(resolve_selected_path(source, wanted_output, input_exists, output_format), "output")
    wanted_report = root.confine(report_path, "report") if report_path else None
    report = resolve_report_path(source, output, wanted_report)
    return RunPaths(source, output, report, root.path, output_format)


def name_once(path: str | os.PathLike[str], error: str) -> str:
    """``error``, prefixed with ``path`` unless it names the path already, as given or resolved."""
    text = os.fspath(path)
    named = text in error or str(Path(text).resolve()) in error
    return error if named else f"{text}: {error}"
