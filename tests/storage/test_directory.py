"""The directory scan of the scheduled run (:mod:`selection_storage.directory`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selection_core.errors import InvalidBatchError
from selection_storage.directory import find_batches, find_stale_batches

# --- scheduled directory scan -------------------------------------------------------


def _touch(path: Path, mtime_ns: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_stale_batches_are_missing_or_older_outputs(tmp_path: Path) -> None:
    t = 1_700_000_000 * 10**9
    fresh = _touch(tmp_path / "fresh_extracted.json", t)
    _touch(tmp_path / "fresh_extracted_selected.json", t + 1)
    same_age = _touch(tmp_path / "same_extracted.json", t)
    _touch(tmp_path / "same_extracted_selected.json", t)
    older = _touch(tmp_path / "sub" / "older_extracted.json", t + 5)
    _touch(tmp_path / "sub" / "older_extracted_selected.json", t)
    missing = _touch(tmp_path / "sub" / "deeper" / "new_extracted.json", t)
    _touch(tmp_path / "notes.json", t)
    _touch(tmp_path / ".hidden" / "h_extracted.json", t)

    assert find_batches(tmp_path) == sorted([fresh, same_age, older, missing])
    assert find_stale_batches(tmp_path) == sorted([older, missing])


def test_directory_scan_does_not_follow_symlinked_directories(tmp_path: Path) -> None:
    inside = tmp_path / "root"
    outside = tmp_path / "outside"
    _touch(outside / "x_extracted.json", 10**18)
    inside.mkdir()
    (inside / "link").symlink_to(outside, target_is_directory=True)
    assert find_batches(inside) == []


def test_directory_scan_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidBatchError, match="not an existing directory"):
        find_batches(tmp_path / "missing")
