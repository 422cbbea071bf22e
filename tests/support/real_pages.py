"""Every real page of the tests, decoded once, and pages made to be hard, for the extractor-level tests.

:func:`real_pages` reads the manifests of ``tests/data/aeb-pages`` (181 pages) and
``tests/data/pages`` (6 of them again, as the quick tests use them) and decodes each
page as the extract step does (:func:`selection_extraction.decode.decode_html`).
:func:`hostile_pages` are HTML strings that no extractor is built for.
"""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selection_extraction.decode import decode_html
from tests.support import AEB_PAGES, PAGES

#: A tie for newspaper4k's top gravity score: two candidate ``div`` s (one in ``section``),
#: each with one paragraph of the same stop words. The library's own order of its
#: candidates decides which paragraph is the article (newspaper4k #738).
TIE_PAGE = (
    "<html><head><title>Two stories</title></head><body>"
    '<div class="story"><p>The council said that it would open the new bridge to all of the people'
    " in the town by the end of the year.</p></div>"
    '<section><div class="story"><p>The mayor said that it would open the new road to all of the people'
    " in the town by the end of the year.</p></div></section>"
    "</body></html>"
)

#: A long article with non-ASCII letters, as the broken-page tests use it.
CAFE_ARTICLE = (
    "<html><head><title>Café</title>{meta}</head><body><article>"
    + "".join(
        f"<p>Paragraph {i}: the café served crème brûlée to naïve visitors, “quoted” and déjà vu, "
        "while the city council debated schools, roads and the library budget at length.</p>"
        for i in range(12)
    )
    + "</article></body></html>"
)


@dataclass(frozen=True)
class RealPage:
    """One real page: its id (from its manifest), URL and decoded HTML."""

    id: str
    url: str | None
    html: str


class AllocationNoise:
    """Keeps a random number of small lxml trees alive, changed at every :meth:`shake`.

    Called between extractor calls, it makes the next page's elements land at other
    memory addresses, the way a long run's memory moves: what set-ordered code
    (newspaper4k #738) is sensitive to.
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._ballast: list[list[Any]] = []

    def shake(self) -> None:
        import lxml.html

        self._ballast.append([lxml.html.fromstring("<div><p>x</p></div>") for _ in range(self._rng.randrange(40))])
        if len(self._ballast) > 8 or self._rng.random() < 0.5:
            self._ballast.pop(self._rng.randrange(len(self._ballast)))


def _manifest_pages(folder: Path) -> list[RealPage]:
    pages = []
    for line in (folder / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        data = gzip.decompress((folder / entry["path"]).read_bytes())
        pages.append(RealPage(f"{folder.name}/{entry['id']}", entry["url"], decode_html(data).html))
    return pages


def real_pages() -> list[RealPage]:
    """The 187 real pages (181 of the benchmark, then the 6 quick-test pages), in manifest order."""
    return _manifest_pages(AEB_PAGES) + _manifest_pages(PAGES)


def hostile_pages() -> dict[str, str]:
    """HTML that no extractor is built for, by name (all made here, deterministically)."""
    rng = random.Random(20241201)
    junk = bytes(rng.randrange(256) for _ in range(20_000)).decode("utf-8", "replace")
    real = _manifest_pages(PAGES)[0].html
    return {
        "empty": "",
        "whitespace": " \n\t ",
        "binary junk": junk,
        "nul characters": "<html><body><p>a\x00b\x00c the of and</p></body></html>",
        "title only": "<html><head><title>Only a title</title></head></html>",
        "no title, no body": "<p>A lone paragraph that has some of the words in it, and the rest of them.</p>",
        "xml declaration with encoding": '<?xml version="1.0" encoding="utf-8"?>' + CAFE_ARTICLE.format(meta=""),
        "frameset": '<html><frameset><frame src="a.html"></frameset></html>',
        "script only": "<html><body><script>var a = '<p>not text</p>';</script></body></html>",
        "unclosed tags": "<html><body><div><p>One of the paragraphs that is in the body<div><p>and another one",
        "deep nesting": "<html><body>" + "<div>" * 3000 + "<p>Deep down in the tree, a text.</p>" + "</div>" * 3000,
        "cafe article": CAFE_ARTICLE.format(meta='<meta charset="utf-8">'),
        # newspaper4k raises ImportError: its Korean tokenizer needs the optional nltk.
        "korean, without nltk": '<html lang="ko"><head><title>뉴스</title></head><body>'
        + "<p>서울시는 올해 말까지 새 다리를 모든 시민에게 개방할 것이라고 밝혔다.</p>" * 5
        + "</body></html>",
        "tie for the top score": TIE_PAGE,
        "a real page, 2 MB of script": real.replace(
            "</body>", "<script>window.__STATE__ = '" + "x" * 2_000_000 + "';</script></body>"
        ),
        "a real page, twice": real + real,
    }
