"""The one escaping rule of the artifacts' Markdown (selection_core.markdown): text shown as it is, in both UIs."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selection_core.markdown import md_cell, md_code


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
