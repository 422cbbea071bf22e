"""The adapters (selection_extraction.adapters): one text per page, the libraries' own texts, and the code they rely on.

* The tie page shows newspaper4k's set-ordered tie (newspaper4k #738): the library
  alone gives two texts on it in one process; the adapters give one.
* The lean paths give exactly what the libraries' own calls give, on every real page
  and on pages made to be hard (texts, titles, exception types).
* The library code they reproduce is pinned (``tests/data/extractor_sources.json``):
  an upgrade that changes it fails here until someone has checked it.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable
from typing import Any

import pytest

from selection_extraction import adapters
from selection_extraction.pool import call_extractor
from tests.support import reference_extractors as reference
from tests.support.library_sources import PINS_PATH, pins
from tests.support.real_pages import TIE_PAGE, AllocationNoise, hostile_pages, real_pages

TIE_URL = "https://news.example/two-stories"

#: The paragraph that wins the tie when it goes to the first candidate found (the deeper one).
TIE_WINNER = "The mayor said that it would open the new road"

Adapter = Callable[[str, "str | None"], tuple[str, "str | None"]]


@pytest.fixture(scope="module", autouse=True)
def _offline_tldextract() -> None:
    adapters.prepare_worker()


def perturbed_texts(function: Adapter, html: str, calls: int, seed: int = 0) -> collections.Counter[str]:
    """The texts of ``calls`` calls in this process, with other lxml trees allocated between calls."""
    noise = AllocationNoise(seed)
    texts: collections.Counter[str] = collections.Counter()
    for _ in range(calls):
        noise.shake()
        texts[function(html, TIE_URL)[0]] += 1
    return texts


# --------------------------------------------------------------------------- the tie


def test_the_tie_page_ties_for_the_top_gravity_score(mocker: Any) -> None:
    from newspaper import parsers

    spy = mocker.spy(adapters.TieOrderBodyExtractor, "compute_gravity_scores")
    adapters.extract_newspaper4k(TIE_PAGE, TIE_URL)
    ranked = sorted(spy.spy_return, key=parsers.get_node_gravity_score, reverse=True)
    first, second = ranked[:2]
    assert parsers.get_node_gravity_score(first) == parsers.get_node_gravity_score(second) > 0
    assert first.tag == second.tag == "div" and first.text_content() != second.text_content()


def test_the_library_alone_lets_memory_addresses_choose_the_text_of_the_tie_page() -> None:
    if "compute_gravity_scores" not in adapters.NEEDED_TIE_FIXES:
        pytest.skip("the installed newspaper4k dedupes its candidates in order: the fix is not applied")
    texts = perturbed_texts(reference.newspaper4k_default, TIE_PAGE, calls=100)
    assert len(texts) == 2, f"newspaper4k {texts}: if one text now, it may have fixed #738; see TIE_FIXES"


@pytest.mark.parametrize(
    "function",
    [adapters.extract_trafilatura, adapters.extract_newspaper4k, adapters.extract_readability],
    ids=["trafilatura", "newspaper4k", "readability"],
)
def test_30_calls_on_the_tie_page_in_one_process_give_one_text(function: Adapter) -> None:
    texts = perturbed_texts(function, TIE_PAGE, calls=30, seed=7)
    assert len(texts) == 1 and sum(texts.values()) == 30
    assert next(iter(texts)).strip()


def test_the_tie_goes_to_the_candidate_found_first() -> None:
    text, title = adapters.extract_newspaper4k(TIE_PAGE, TIE_URL)
    assert text.startswith(TIE_WINNER) and title == "Two stories"


def test_a_method_that_no_longer_dedupes_through_set_is_left_alone(mocker: Any) -> None:
    from newspaper.extractors.articlebody_extractor import ArticleBodyExtractor

    def ordered(self: Any, nodes: list[Any]) -> list[Any]:
        return list(dict.fromkeys(nodes))

    assert adapters._dedupes_through_set(ArticleBodyExtractor.compute_gravity_scores, "set(parent_nodes)")
    assert not adapters._dedupes_through_set(ordered, "set(parent_nodes)")
    assert adapters._dedupes_through_set(len, "set(parent_nodes)")  # no source to read: keep the fix
    library_result = [object()]
    mocker.patch.object(ArticleBodyExtractor, "compute_gravity_scores", return_value=library_result)
    mocker.patch.object(adapters, "NEEDED_TIE_FIXES", frozenset())
    extractor = adapters.TieOrderBodyExtractor(adapters._newspaper_config())
    assert extractor.compute_gravity_scores([]) is library_result


def test_every_article_gets_the_tie_fix_and_its_own_config() -> None:
    first = adapters.newspaper4k_article(TIE_PAGE, TIE_URL)
    second = adapters.newspaper4k_article(TIE_PAGE, TIE_URL)
    assert type(first.extractor.article_body_extractor) is adapters.TieOrderBodyExtractor
    assert first.extractor.article_body_extractor.config is first.config
    assert first.config is not second.config


# --------------------------------------------------------------------------- the library code relied on


def test_the_library_code_the_adapters_rely_on_is_the_pinned_release() -> None:
    pinned = json.loads(PINS_PATH.read_text(encoding="utf-8"))
    installed = pins()
    for distribution, entry in installed.items():
        assert pinned[distribution]["version"] == entry["version"], (
            f"{distribution} {entry['version']} is installed, the adapters were checked against "
            f"{pinned[distribution]['version']}: see scripts/pin_extractor_sources.py"
        )
        was = pinned[distribution]["sources"]
        changed = [name for name, digest in entry["sources"].items() if was.get(name) != digest]
        assert not changed, f"{distribution} changed {changed}: see scripts/pin_extractor_sources.py"


def test_the_installed_newspaper4k_needs_both_tie_fixes() -> None:
    assert adapters.NEEDED_TIE_FIXES == set(adapters.TIE_FIXES)


# --------------------------------------------------------------------------- lean = the library's own


def _outcome(function: Adapter, html: str, url: str | None) -> tuple[str, str | None, str | None]:
    outcome = call_extractor(function, html, url)
    return outcome.text, outcome.title, outcome.error and outcome.error.split(":")[0]


LEAN_AND_REFERENCE = [
    pytest.param(adapters.extract_newspaper4k, reference.newspaper4k_full_parse, id="newspaper4k"),
    pytest.param(adapters.extract_readability, reference.readability_default, id="readability"),
]


@pytest.mark.parametrize(("lean", "reference"), LEAN_AND_REFERENCE)
@pytest.mark.parametrize("name", sorted(hostile_pages()))
def test_the_lean_path_gives_the_library_own_result_on_a_hostile_page(
    lean: Adapter, reference: Adapter, name: str
) -> None:
    html = hostile_pages()[name]
    assert _outcome(lean, html, TIE_URL) == _outcome(reference, html, TIE_URL)


def test_the_hostile_pages_include_errors_of_the_libraries() -> None:
    errors = {
        name: _outcome(reference.newspaper4k_full_parse, html, TIE_URL)[2] for name, html in hostile_pages().items()
    }
    readability_errors = {
        name: _outcome(reference.readability_default, html, TIE_URL)[2] for name, html in hostile_pages().items()
    }
    assert any(errors.values()) and any(readability_errors.values())


@pytest.mark.slow
# The full parse runs the publication-date step, whose dateutil warns about "EST"; the lean path does not run it.
@pytest.mark.filterwarnings("ignore:tzname .* identified but not understood")
@pytest.mark.parametrize(("lean", "reference"), LEAN_AND_REFERENCE)
def test_the_lean_path_gives_the_library_own_text_and_title_on_every_real_page(
    lean: Adapter, reference: Adapter
) -> None:
    pages = real_pages()
    differ = [p.id for p in pages if _outcome(lean, p.html, p.url) != _outcome(reference, p.html, p.url)]
    assert len(pages) == 187 and differ == []
