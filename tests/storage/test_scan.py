"""The first pass over a batch file (``selection_storage.scan``): the SHA-256, runs and envelope, read block by block.

Its answer must be the one of the whole-buffer scan (``selection_core.layout.scan_layout``)
for any bytes and any block size: the same articles in the same places, grouped into
runs within their bounds, the same envelope, and giving up exactly where that scan
gives up. Small blocks make every value cross a block boundary somewhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection_core.layout import envelope_bytes, scan_layout
from selection_storage.files import InputChangedError
from selection_storage.scan import scan_file
from tests.support import DATA
from tests.support.batch_strategies import batch_documents

AEB = DATA / "aeb_batch_extracted.json"


def _check(path: Path, data: bytes, block: int, max_bytes: int, max_articles: int | None) -> None:
    scanned = scan_file(path, max_bytes, max_articles, block=block)
    assert scanned.sha256 == hashlib.sha256(data).hexdigest()
    assert scanned.identity.size == len(data)
    whole = scan_layout(data)
    if whole is None:
        assert scanned.layout is None and scanned.envelope == b""
        return
    found = scanned.layout
    assert found is not None
    assert (found.open, found.close, found.articles) == (whole.open, whole.close, whole.articles)
    assert scanned.envelope == envelope_bytes(data, whole)
    stop = 0
    for run in found.runs:
        assert run.start == stop and run.stop > run.start  # consecutive, none empty
        assert (run.begin, run.end) == (whole.starts[run.start], whole.ends[run.stop - 1])
        assert len(run) == 1 or run.end - run.begin <= max_bytes
        assert max_articles is None or len(run) <= max_articles
        stop = run.stop
    assert stop == whole.articles


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    document=batch_documents(),
    block=st.integers(1, 64),
    max_bytes=st.integers(1, 200),
    max_articles=st.none() | st.integers(1, 4),
)
def test_any_document_is_found_as_the_whole_buffer_scan_finds_it(
    tmp_path: Path, document: tuple[bytes, object], block: int, max_bytes: int, max_articles: int | None
) -> None:
    data = document[0]
    path = tmp_path / "batch.json"
    path.write_bytes(data)
    _check(path, data, block, max_bytes, max_articles)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=batch_documents(), data=st.data())
def test_mutated_bytes_give_up_where_the_whole_buffer_scan_gives_up(
    tmp_path: Path, document: tuple[bytes, object], data: st.DataObject
) -> None:
    raw = bytearray(document[0])
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, max(0, len(raw) - 1)))
        byte = data.draw(st.sampled_from(list(b'"\\[]{},: x1')))
        if data.draw(st.booleans()) and raw:
            del raw[at]
        else:
            raw.insert(at, byte)
    path = tmp_path / "batch.json"
    path.write_bytes(bytes(raw))
    _check(path, bytes(raw), data.draw(st.integers(1, 32)), 50, None)


@pytest.mark.parametrize("block", [1, 7, 4096, 8 << 20])
def test_the_real_batch_is_cut_into_runs_within_their_bounds(block: int) -> None:
    _check(AEB, AEB.read_bytes(), block, 200_000, 50)


@pytest.mark.parametrize(
    "data",
    [b"", b"[]", b'{"articles": [] ', b'{"articles": [{"a": "open}]}', b'{"articles": []} x', b'{"articles": [1 2]}'],
)
def test_what_cannot_be_delimited_gives_no_layout_and_still_the_hash(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "batch.json"
    path.write_bytes(data)
    _check(path, data, 3, 10, None)


def test_a_file_that_grows_while_it_is_read_is_noticed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import selection_storage.scan as scan

    path = tmp_path / "batch.json"
    path.write_bytes(AEB.read_bytes())
    real_refill = scan._Window.refill

    def refill_then_append(self: scan._Window, keep: int) -> bool:  # a writer appends during the read (injected)
        got = real_refill(self, keep)
        if self.read_bytes and not getattr(self, "_appended", False):
            self._appended = True  # type: ignore[attr-defined]
            with open(path, "ab") as fh:
                fh.write(b"\n")
        return got

    monkeypatch.setattr(scan._Window, "refill", refill_then_append)
    with pytest.raises(InputChangedError, match="changed while it was being read"):
        scan_file(path, 1 << 20, block=1 << 16)


def test_a_huge_article_costs_a_number_of_refills_logarithmic_in_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import selection_storage.scan as scan

    big = b'{"articles": [{"text": "' + b"x" * 3_000_000 + b'"}, {"a": 1}]}'
    path = tmp_path / "big.json"
    path.write_bytes(big)
    refills: list[int] = []
    real = scan._Window.refill

    def counting(self: scan._Window, keep: int) -> bool:
        refills.append(keep)
        return real(self, keep)

    monkeypatch.setattr(scan._Window, "refill", counting)
    scanned = scan_file(path, 1 << 20, block=1024)
    assert scanned.layout is not None and scanned.layout.articles == 2
    assert len(refills) < 40  # a fixed 1 KiB block would take about 3000 refills, each copying and rescanning
    assert scanned.sha256 == hashlib.sha256(big).hexdigest()
