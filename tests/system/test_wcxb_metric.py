"""The WCXB benchmark's word F1 (benchmarks/wcxb_metric.py) on tiny hand-made cases.

Every expected value is worked out by hand in the case's comment.
"""

from __future__ import annotations

import pytest

from tests.support import benchmark_module

metric = benchmark_module("wcxb_metric")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("  ...  ", [], id="punctuation-only"),
        pytest.param("Don't STOP", ["don", "t", "stop"], id="lower-cased-apostrophe-splits"),
        pytest.param("naïve café_1", ["naïve", "café_1"], id="unicode-word-characters"),
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert metric.words(text) == expected


@pytest.mark.parametrize(
    ("predicted", "reference", "expected"),
    [
        # the same words in another case and order: overlap 3 of 3 each way
        pytest.param("C b A", "a b c", (1.0, 1.0, 1.0), id="bag-of-words-ignores-order-and-case"),
        # prediction 2 words, both in the 4-word reference: P 1, R 1/2, F1 2/3
        pytest.param("a b", "a b c d", (1.0, 0.5, 2 / 3), id="truncated"),
        # prediction 4 words, 2 in the 2-word reference: P 1/2, R 1, F1 2/3
        pytest.param("a b x y", "a b", (0.5, 1.0, 2 / 3), id="boilerplate-kept"),
        # "a" twice predicted, once in the reference: multiset overlap 1; P 1/2, R 1, F1 2/3
        pytest.param("a a", "a", (0.5, 1.0, 2 / 3), id="repeats-count-once-each"),
        pytest.param("x", "a", (0.0, 0.0, 0.0), id="no-overlap"),
        pytest.param("", "a", (0.0, 0.0, 0.0), id="empty-prediction"),
        pytest.param("", "", (1.0, 1.0, 1.0), id="both-empty"),
        pytest.param("x", "", (0.0, 0.0, 0.0), id="empty-reference"),
    ],
)
def test_word_scores(predicted: str, reference: str, expected: tuple[float, float, float]) -> None:
    assert tuple(metric.word_scores(predicted, reference)) == pytest.approx(expected)


def test_a_set_of_pages_scores_the_mean_of_each_page() -> None:
    pages = [metric.word_scores("a b", "a b c d"), metric.word_scores("a b x y", "a b")]
    # precision (1 + 1/2) / 2, recall (1/2 + 1) / 2, F1 the mean of the pages' F1 (2/3 each), not the F1 of the means
    assert tuple(metric.mean_scores(pages)) == pytest.approx((0.75, 0.75, 2 / 3))
    assert tuple(metric.mean_scores([])) == (0.0, 0.0, 0.0)
