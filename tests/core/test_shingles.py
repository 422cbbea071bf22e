"""``selection_core.shingles``: the fast, line-by-line shingling equals the plain definition.

``text_shingles(text) == (len(t), shingles(t))`` with ``t = tokenize(text)``.
"""

from __future__ import annotations

import pytest

import selection_core as sc
from selection_core.shingles import LineCache, text_shingles

LINE_CASES = [
    pytest.param("one two three\nfour five six", id="window-across-a-break"),
    pytest.param("a\nb\nc\nd\ne\nf", id="one-token-lines"),
    pytest.param("a b\n\n\nc d e f g h", id="blank-lines"),
    pytest.param("a b c d\ne f g h i j", id="four-then-six"),
    pytest.param("x\n \n\t\ny", id="whitespace-lines"),
    pytest.param("", id="empty"),
    pytest.param("one two", id="short"),
    pytest.param("Ã©t\u00e9 caf\u00c3\u00a9\nnext line here now please", id="mojibake-with-break"),
]


@pytest.mark.parametrize("text", LINE_CASES)
def test_text_shingles_equals_the_definition(text: str) -> None:
    tokens = sc.tokenize(text)
    assert text_shingles(text) == (len(tokens), sc.shingles(tokens))
    assert text_shingles(text, LineCache()) == (len(tokens), sc.shingles(tokens))


def test_shared_cache_gives_each_text_its_own_set() -> None:
    """Found by the property tests: a per-article memo keyed by object identity
    returned another text's set once a temporary set had been freed. Texts with
    short first lines build uncached crossing windows; no consensus exists here."""
    article = {
        "trafilatura": {"text": "café café</b> alpha\xa0Beta&nbsp;δέλτα\n"},
        "newspaper4k": {"text": "42 cafÃ©\nalpha</b> Beta](u) δέλτα\n"},
        "readability": {"cleaned_text": "GAMMA</b> alpha <b>Beta![i](u)cafÃ©\nalpha GAMMA&nbsp;42&amp; "},
    }
    cache = LineCache()
    for name, field in (("trafilatura", "text"), ("newspaper4k", "text"), ("readability", "cleaned_text")):
        text = article[name][field]
        tokens = sc.tokenize(text)
        assert text_shingles(text, cache) == (len(tokens), sc.shingles(tokens))
    sel = sc.select_article(article)
    assert sel.consensus_size == 0
    assert sel.reason is sc.Reason.NO_CONSENSUS_MEDIAN
