"""A JSON batch the lexer gives up on inside its articles: refused in the whole document's words, without holding it.

A file cut short, unbalanced brackets, a missing or doubled comma, an unterminated
string: ``plan_batch`` must raise exactly what ``parse_batch`` of the whole file
raises, and for these (the lexer gave up inside the ``articles`` array) it must not
read the file whole (``selection_storage.refusal.prefix_refusal``). Checked on
Hypothesis batches in any JSON formatting, with multi-byte characters, an earlier
error or invalid UTF-8 further on now and then, and tiny read blocks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import selection_core as sc
import selection_storage.chunks as chunks
import selection_storage.refusal as refusal
from selection_core.layout import scan_layout
from selection_storage.scan import scan_file
from tests.support import DATA
from tests.support.batch_strategies import batch_documents

AEB = DATA / "aeb_batch_extracted.json"


def whole_message(data: bytes, path: Path) -> str:
    with pytest.raises(sc.InvalidBatchError) as refused:
        sc.parse_batch(data, str(path))
    return str(refused.value)


def bounded_message(path: Path, mocker: Any) -> str:
    """``plan_batch``'s refusal, with reading the whole file made to fail."""
    for module in (chunks, refusal):
        if hasattr(module, "read_input"):
            mocker.patch.object(module, "read_input", side_effect=AssertionError("the whole file was read"))
    with pytest.raises(sc.InvalidBatchError) as refused:
        chunks.plan_batch(path, 2)
    mocker.stopall()
    return str(refused.value)


def damaged(data: bytes, opened: int, close: int, how: str, at: int) -> bytes:
    inside = opened + 1 + at % max(1, close - opened - 1)
    if how == "cut":
        return data[:inside]
    if how == "bracket":
        return data[:inside] + b"]" + data[inside:]
    if how == "quote":
        return data[:inside] + b'"' + data[inside:]
    if how == "comma":
        comma = data.find(b",", inside, close)
        return data[:comma] + data[comma + 1 :] if comma >= 0 else data[:inside]
    raise ValueError(how)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    document=batch_documents(),
    how=st.sampled_from(["cut", "bracket", "quote", "comma"]),
    at=st.integers(0, 10**6),
    extra=st.sampled_from(["", "bad-utf8-after", "bad-literal-before"]),
    gap=st.sampled_from([8, 64, 1 << 20]),
)
def test_the_refusal_is_the_whole_document_s_and_the_file_is_not_read_whole(
    tmp_path_factory: pytest.TempPathFactory,
    mocker: Any,
    document: tuple[bytes, object],
    how: str,
    at: int,
    extra: str,
    gap: int,
) -> None:
    data = document[0]
    layout = scan_layout(data)
    assert layout is not None
    bad = damaged(data, layout.open, layout.close, how, at)
    if extra == "bad-utf8-after":
        bad += b"\xff"
    elif extra == "bad-literal-before" and layout.articles:
        start = layout.starts[0]
        bad = bad[: start + 1] + b'"x": tru,' + bad[start + 1 :] if len(bad) > start + 1 else bad
    path = tmp_path_factory.mktemp("prefix") / "b_extracted.json"
    path.write_bytes(bad)
    scanned = scan_file(path, 1 << 20, 2)
    if scanned.layout is not None or scanned.partial is None:
        return  # still delimited (the damage kept it JSON-shaped), or given up outside the array
    mocker.patch.object(refusal, "GAP_BLOCK", gap)
    assert bounded_message(path, mocker) == whole_message(bad, path)


@pytest.mark.parametrize("keep", [0.999, 0.5, 0.02])
def test_a_real_batch_cut_short_is_refused_where_the_whole_parse_says(tmp_path: Path, mocker: Any, keep: float) -> None:
    data = AEB.read_bytes()
    path = tmp_path / "cut_extracted.json"
    path.write_bytes(data[: int(len(data) * keep)])
    message = bounded_message(path, mocker)
    assert message == whole_message(path.read_bytes(), path)
    assert "unexpected end of data" in message


def test_a_bracket_mismatch_early_in_a_big_file_is_found_from_a_small_piece(tmp_path: Path, mocker: Any) -> None:
    data = AEB.read_bytes()
    first = data.index(b'"trafilatura"', data.index(b'"articles"'))  # in the first article
    path = tmp_path / "b_extracted.json"
    path.write_bytes(data[:first] + b'"x": [1}, ' + data[first:])
    reads: list[int] = []
    real = refusal.read_span

    def spy(p: Path, identity: Any, start: int, end: int, *args: Any) -> Any:
        reads.append(end - start)
        return real(p, identity, start, end, *args)

    mocker.patch.object(refusal, "read_span", side_effect=spy)
    mocker.patch.object(refusal, "GAP_BLOCK", 4096)
    message = bounded_message(path, mocker)
    assert message == whole_message(path.read_bytes(), path)
    assert max(reads) <= 8192  # blocks and pieces of the UTF-8 check and the rest, never the file
