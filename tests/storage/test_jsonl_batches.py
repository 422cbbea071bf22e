"""JSON Lines batches through the file layer: ``select_file`` on ``*.jsonl``, chunk by chunk, and the directory scan.

The expected bytes are computed here from the core (each line parsed, selected, and
written back by ``render_lines``), never stored; the report must be the JSON batch's
report of the same articles, and the refusals must name the line.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import selection_core as sc
from selection_core.config import SELECTED_KEY
from selection_engine import select_file
from selection_storage import find_batches
from tests.support import DATA, sha256_file

AEB = DATA / "aeb_batch_extracted.json"
ARTICLES = orjson.loads(AEB.read_bytes())["articles"]


def as_lines(articles: list[dict], style: str = "compact") -> bytes:
    """The articles as a JSON Lines file, in a given spelling of the same values."""
    if style == "compact":
        return b"".join(orjson.dumps(a) + b"\n" for a in articles)
    if style == "spaced-crlf-no-final-newline":
        import json

        return b"\r\n".join(json.dumps(a, ensure_ascii=True, separators=(" , ", " : ")).encode() for a in articles)
    raise ValueError(style)


def expected_lines(articles: list[dict]) -> bytes:
    selections = sc.select_articles(articles)
    out = []
    for article, selection in zip(articles, selections, strict=True):
        written = dict(article)
        written[SELECTED_KEY] = selection.selected
        out.append(orjson.dumps(written) + b"\n")
    return b"".join(out)


@pytest.mark.parametrize("style", ["compact", "spaced-crlf-no-final-newline"])
@pytest.mark.parametrize("chunk_articles", [1, 7, None])
def test_a_jsonl_batch_is_selected_line_by_line_with_the_json_batch_s_decisions(
    tmp_path: Path, style: str, chunk_articles: int | None
) -> None:
    source = tmp_path / "b_extracted.jsonl"
    source.write_bytes(as_lines(ARTICLES, style))
    result = select_file(source, report_path=tmp_path / "r.jsonl", chunk_articles=chunk_articles)
    assert result.output_path == tmp_path / "b_extracted_selected.jsonl"
    assert result.output_path.read_bytes() == expected_lines(ARTICLES)
    as_json = select_file(AEB, tmp_path / "json.json", tmp_path / "json-report.jsonl")
    assert (tmp_path / "r.jsonl").read_bytes() == (tmp_path / "json-report.jsonl").read_bytes()
    assert result.summary == as_json.summary
    assert result.input_sha256 == sha256_file(source) and result.output_sha256 == sha256_file(result.output_path)
    assert result.chunks == (-(-181 // chunk_articles) if chunk_articles else 1)


def test_chunks_of_lines_are_bounded_in_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from selection_engine import engine

    monkeypatch.setattr(engine, "CHUNK_BYTES", 100_000)
    source = tmp_path / "b_extracted.jsonl"
    source.write_bytes(as_lines(ARTICLES))
    result = select_file(source)
    assert result.output_path.read_bytes() == expected_lines(ARTICLES)
    assert result.chunks >= len(source.read_bytes()) // 100_000


def test_an_empty_jsonl_file_is_an_empty_batch(tmp_path: Path) -> None:
    source = tmp_path / "empty_extracted.jsonl"
    source.write_bytes(b"")
    result = select_file(source, report_path=tmp_path / "r.jsonl")
    assert result.summary.articles == 0
    assert result.output_path.read_bytes() == b"" and (tmp_path / "r.jsonl").read_bytes() == b""


@pytest.mark.parametrize(
    ("damage", "line", "fragment"),
    [
        (lambda lines: lines.__setitem__(150, lines[150][:-1]), 151, "line 151 ends inside its article"),
        (lambda lines: lines.__setitem__(120, b"[1, 2]"), 121, "line 121 is an array"),
        (lambda lines: lines.insert(170, b""), 171, "line 171 is blank"),
        (lambda lines: lines.__setitem__(99, lines[99][:-1] + b', "id": 1}'), 100, 'has the key "id" more than once'),
        (
            lambda lines: lines.__setitem__(60, lines[60][:-1] + b', "n": 123456789012345678901234567890}'),
            61,
            "64 bits",
        ),
    ],
    ids=["syntax", "not-an-object", "blank", "duplicate-key", "big-int"],
)
def test_a_bad_line_deep_in_the_file_is_refused_with_its_number_and_nothing_is_written(
    tmp_path: Path, damage, line: int, fragment: str
) -> None:
    lines = [orjson.dumps(a) for a in ARTICLES]
    damage(lines)
    source = tmp_path / "b_extracted.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    whole_message = None
    try:
        sc.parse_lines(source.read_bytes(), str(source))
    except sc.InvalidBatchError as exc:
        whole_message = str(exc)
    for chunk_articles in (1, 13, None):
        with pytest.raises(sc.InvalidBatchError) as refused:
            select_file(source, report_path=tmp_path / "r.jsonl", chunk_articles=chunk_articles)
        message = str(refused.value)
        assert message == whole_message  # the same line whatever the chunks
        assert message.startswith(f"{source}: line {line}")
        assert fragment in message and "\n" not in message
        assert sorted(p.name for p in tmp_path.iterdir()) == ["b_extracted.jsonl"]


def test_the_output_is_written_in_the_input_s_format(tmp_path: Path) -> None:
    source = tmp_path / "b_extracted.jsonl"
    source.write_bytes(as_lines(ARTICLES[:3]))
    with pytest.raises(
        sc.OutputPathError, match=r"JSON Lines batch, written back as JSON Lines; name the output \*\.jsonl"
    ):
        select_file(source, tmp_path / "out.json")
    with pytest.raises(sc.OutputPathError, match=r"name the output \*\.json$"):
        select_file(AEB, tmp_path / "out.jsonl")
    select_file(source, tmp_path / "out.lines")  # another suffix is the user's choice
    assert (tmp_path / "out.lines").read_bytes() == expected_lines(ARTICLES[:3])


def test_the_directory_scan_picks_up_both_formats(tmp_path: Path) -> None:
    (tmp_path / "a_extracted.json").write_bytes(AEB.read_bytes())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b_extracted.jsonl").write_bytes(as_lines(ARTICLES[:2]))
    (tmp_path / "sub" / "b_extracted.extraction.json").write_bytes(b"{}")
    (tmp_path / "c_selected.jsonl").write_bytes(b"")
    assert find_batches(tmp_path) == [tmp_path / "a_extracted.json", tmp_path / "sub" / "b_extracted.jsonl"]
