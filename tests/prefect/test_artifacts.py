"""The artifacts' Markdown: the escaping rule, the closest calls, the summary, the descriptions."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import selection_core as sc
from content_selection.tasks.artifacts import closest_calls_markdown, scores_description, summary_markdown
from selection_core.evidence import (
    CLOSEST_CALLS_ARTIFACT_KEY,
    MAX_CLOSEST_CALLS,
    close_call_entries,
    md_cell,
    md_code,
)
from selection_extraction import ExtractionStats
from selection_extraction.artifacts import extraction_markdown
from tests.core.test_evidence import KINDS, _selections
from tests.support import DATA
from tests.support.evidence import batch_evidence

# --- the escaping rule --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        pytest.param("the page's <meta>/XML charset", "the page's \\<meta\\>/XML charset", id="html-tag-not-swallowed"),
        pytest.param("a|b", "a\\|b", id="pipe-does-not-split-the-cell"),
        pytest.param("a & b &amp;", "a \\& b \\&amp;", id="entity-not-decoded"),
        pytest.param("*x* [l](u) `c` ~s~ ![i]", "\\*x\\* \\[l\\](u) \\`c\\` \\~s\\~ \\!\\[i\\]", id="formatting"),
        pytest.param("selection_core _em_", "selection_core \\_em\\_", id="intraword-underscore-kept"),
        pytest.param("a\nb\r\nc", "a b c", id="one-line"),
        pytest.param("back\\slash", "back\\\\slash", id="backslash"),
    ],
)
def test_md_cell(text: str, cell: str) -> None:
    assert md_cell(text) == cell


@pytest.mark.parametrize(
    ("text", "code"),
    [
        pytest.param("/data/a b.json", "`/data/a b.json`", id="plain"),
        pytest.param("<meta charset>", "`<meta charset>`", id="html-literal-in-code"),
        pytest.param("a|b", "`a\\|b`", id="pipe-escaped-for-the-table"),
        pytest.param("a`b", "``a`b``", id="backtick-inside"),
        pytest.param("`a``", "``` `a`` ```", id="backticks-at-the-ends"),
        pytest.param("", "", id="empty"),
    ],
)
def test_md_code(text: str, code: str) -> None:
    assert md_code(text) == code


@given(st.text(max_size=60))
def test_md_cell_escapes_every_syntax_character(text: str) -> None:
    cell = md_cell(text)
    assert "\n" not in cell and "\r" not in cell
    unescaped = re.sub(r"\\.", "", cell)  # what is left once each escape pair is removed
    assert not set(unescaped) & set("\\`*[]<>|&~!")
    assert re.sub(r"\\(.)", r"\1", cell) == re.sub(r"\r\n?|\n", " ", text)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), min_size=1))
def test_md_code_gives_the_text_back(text: str) -> None:
    code = md_code(text)
    fence = re.match(r"`+", code).group()
    assert code.endswith(fence)
    inner = code[len(fence) : len(code) - len(fence)]
    assert max((len(run) for run in re.findall(r"`+", inner)), default=0) < len(fence)  # the span ends at the fence
    if text.startswith("`") or text.endswith("`"):
        assert inner.startswith(" ") and inner.endswith(" ")
        inner = inner[1:-1]
    assert inner.replace("\\|", "|") == text


# --- the descriptions and the closest calls -----------------------------------------------------


def test_scores_description_states_the_cap() -> None:
    assert "capped at max_table_rows=2" in scores_description("b.json", 2, 7, 2)
    assert "report_path" in scores_description("b.json", 2, 7, 2)
    assert "report_path" not in scores_description("b.json", 7, 7, 200)


def test_the_closest_calls_markdown_states_the_cap_and_the_counts() -> None:
    articles = [{"url": "https://example.org/?a=1&b=<2>", **KINDS["none"]}]
    articles += [{"id": f"x|{i}", **KINDS["tie-priority"]} for i in range(MAX_CLOSEST_CALLS + 3)]
    selections = sc.select_articles(articles)
    text = closest_calls_markdown("b.json", close_call_entries(articles, selections), sc.summarize(selections))
    lines = text.split("\n")
    assert lines[0] == "# Closest calls: b.json"
    assert f"{MAX_CLOSEST_CALLS} of the {MAX_CLOSEST_CALLS + 4} decisions" in lines[2]
    assert f"at most {MAX_CLOSEST_CALLS} are listed" in lines[2]
    assert lines[4] == "| Index | Selected | Reason | trafilatura | newspaper4k | readability | Article |"
    assert lines[6] == (
        "| 0 | newspaper4k | all_unavailable | unavailable | unavailable | unavailable | exampl…C2%3E |"
    )
    assert lines[7] == (
        "| 1 | newspaper4k | consensus_tie_priority | **1.0000 / 26** | **1.0000 / 26** | **1.0000 / 26** | x\\|0 |"
    )
    assert len([line for line in lines if line.startswith("| ") and line[2].isdigit()]) == MAX_CLOSEST_CALLS


def test_no_close_calls_says_so() -> None:
    selections = sc.select_articles([KINDS["top-score"]])
    text = closest_calls_markdown("b.json", [], sc.summarize(selections))
    assert "No ties or fallbacks among the 1 articles" in text


# --- the summary --------------------------------------------------------------------------------


def _summary_text(report_path: Path | None = None, input_path: str = "/data/b_extracted.json") -> str:
    doc, selections = _selections(3)
    return summary_markdown(
        summary=sc.summarize(selections),
        input_path=Path(input_path),
        input_sha256="a" * 64,
        output_path=Path("/data/b_extracted_selected.json"),
        output_sha256="b" * 64,
        report_path=report_path,
        versions={"selection_core": sc.__version__, "ftfy": "6.3.1", "regex": "2025.1.1"},
        shown_rows=3,
        max_rows=200,
    )


def test_summary_markdown_has_counts_paths_hashes_and_versions() -> None:
    doc, selections = _selections(3)
    summary = sc.summarize(selections)
    text = _summary_text()
    assert "| Articles | 3 |" in text
    assert f"| Input SHA-256 | `{'a' * 64}` |" in text
    assert f"| Output SHA-256 | `{'b' * 64}` |" in text
    assert "`/data/b_extracted_selected.json`" in text
    for name, count in summary.by_extractor.items():
        assert f"| {name} | {count} |" in text
    for reason, count in summary.by_reason.items():
        assert f"| `{reason}` | {count} |" in text
    for component in ("selection_core", "ftfy", "regex"):
        assert f"| {component} | " in text
    assert f"| selection_core | {sc.__version__} |" in text
    assert f"(listed in `{CLOSEST_CALLS_ARTIFACT_KEY}`)" in text


def test_every_summary_table_has_a_header() -> None:
    lines = _summary_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            header = [cell.strip() for cell in lines[i - 1].strip("|").split("|")]
            assert all(header), lines[i - 1]


def test_summary_paths_are_code_and_escaped_for_the_table() -> None:
    text = _summary_text(Path("/r/<x>|y.jsonl"), "/data/a`b_extracted.json")
    assert "| Report (JSON Lines) | `/r/<x>\\|y.jsonl` |" in text
    assert "| Input | ``/data/a`b_extracted.json`` |" in text
    assert text.startswith("# Content selection: a\\`b_extracted.json\n")


# --- the extraction summary ----------------------------------------------------------------------


STATS = ExtractionStats(3, 1, {"trafilatura": 1, "newspaper4k": 0, "readability": 2}, {"trafilatura": 1}, 0, ())


def test_the_extraction_summary_markdown() -> None:
    doc = {
        "extraction": {
            "input": "/data/a|b",
            "input_kind": "directory",
            "time_limit_seconds": 60.0,
            "decoding": "the page's <meta>/XML charset",
            "extractors": {"trafilatura": {"distribution": "trafilatura", "version": "2", "call": "f(x)"}},
        }
    }
    text = extraction_markdown(doc, STATS, Path("/out.json"), "abc", 2, 200)
    lines = text.split("\n")
    assert lines[0] == "# Extraction: a\\|b"
    assert "| Input | `/data/a\\|b` (directory) |" in lines
    assert "| Unreadable pages | 1 |" in lines
    assert "| trafilatura | trafilatura 2 | 1 | 1 | `f(x)` |" in lines
    assert "| readability |   | 2 | 0 |  |" in lines
    assert lines[2] == "| Item | Value |"  # a real header, not an empty row
    assert "Decoding: the page's \\<meta\\>/XML charset." in lines  # not swallowed as an HTML tag
    assert lines[-2] == "The table `extraction-pages` shows 2 of 3 pages (max_table_rows=200)."


# --- the golden batch ---------------------------------------------------------------------------


def test_the_golden_batchs_artifacts_are_pinned() -> None:
    path = DATA / "aeb_batch_extracted.json"
    doc = sc.parse_batch(path.read_bytes())
    selections = sc.select_articles(doc["articles"])
    summary = sc.summarize(selections)
    evidence = batch_evidence(doc, selections, 200)
    texts = [
        repr(evidence.rows),
        scores_description(path.name, len(evidence.rows), summary.articles, 200),
        closest_calls_markdown(path.name, evidence.close_calls, summary),
        summary_markdown(
            summary=summary,
            input_path=Path("/data/a|b.json"),
            input_sha256="a" * 64,
            output_path=Path("/data/`b`.json"),
            output_sha256="b" * 64,
            report_path=None,
            versions={"selection_core": "0.1.0"},
            shown_rows=len(evidence.rows),
            max_rows=200,
            read_as="in 1 chunk of articles, one after the other in this process",
        ),
    ]
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()
    assert digest == "d86ce0b07871d5b7b5f86828ccb5f6c1a10259b2e5c79fcd26983e3408101da4"
