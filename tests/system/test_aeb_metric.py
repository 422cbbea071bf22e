"""The ScrapingHub benchmark's metric (benchmarks/aeb_metric.py) on tiny hand-made cases.

Every expected value is worked out by hand in the case's comment.
"""

from __future__ import annotations

import pytest

from tests.support import benchmark_module

metric = benchmark_module("aeb_metric")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", {}, id="empty-has-no-shingle"),
        pytest.param("  ...  ", {}, id="punctuation-only"),
        pytest.param("one", {("one",): 1}, id="one-token-one-short-shingle"),
        pytest.param("a b c", {("a", "b", "c"): 1}, id="three-tokens-one-short-shingle"),
        pytest.param("a b c d", {("a", "b", "c", "d"): 1}, id="exactly-four"),
        pytest.param(
            "a b c d a b c d",
            {("a", "b", "c", "d"): 2, ("b", "c", "d", "a"): 1, ("c", "d", "a", "b"): 1, ("d", "a", "b", "c"): 1},
            id="multiset-counts-repeats",
        ),
        pytest.param("Don't STOP", {("Don", "t", "STOP"): 1}, id="w-plus-keeps-case-splits-apostrophe"),
        pytest.param("naïve café_1", {("naïve", "café_1"): 1}, id="unicode-word-characters"),
    ],
)
def test_shingles(text: str, expected: dict[tuple[str, ...], int]) -> None:
    assert dict(metric.shingles(text)) == expected


@pytest.mark.parametrize(
    ("truth", "prediction", "counts"),
    [
        # 2 shingles each, identical: TP 2 -> (1, 0, 0)
        pytest.param("a b c d e", "a b c d e", (1.0, 0.0, 0.0), id="identical"),
        # truth abcd, bcde; prediction abcd, bcdx: TP 1, FP 1, FN 1 -> thirds
        pytest.param("a b c d e", "a b c d x", (1 / 3, 1 / 3, 1 / 3), id="one-of-two-shingles-wrong"),
        # truth 2 shingles, prediction empty: FN 2 -> (0, 0, 1)
        pytest.param("a b c d e", "", (0.0, 0.0, 1.0), id="empty-prediction"),
        # prediction 1 short shingle, truth empty: FP 1 -> (0, 1, 0)
        pytest.param("", "x y", (0.0, 1.0, 0.0), id="empty-truth"),
        pytest.param("", "", (0.0, 0.0, 0.0), id="both-empty"),
        # truth abcd x2 (count 2) + bcda, cdab, dabc; prediction abcd once: TP 1, FN 4 -> (0.2, 0, 0.8)
        pytest.param("a b c d a b c d", "a b c d", (0.2, 0.0, 0.8), id="multiset-min-of-counts"),
    ],
)
def test_page_counts_are_normalized(truth: str, prediction: str, counts: tuple[float, float, float]) -> None:
    got = metric.page_counts(truth, prediction)
    assert (got.tp, got.fp, got.fn) == pytest.approx(counts)
    assert got.tp + got.fp + got.fn in (0.0, pytest.approx(1.0))


def test_score_means_over_pages_then_f1_of_the_means() -> None:
    pages = [
        metric.page_counts("a b c d e", "a b c d e"),  # P 1, R 1
        metric.page_counts("a b c d e", "a b c d x"),  # P 1/2, R 1/2
        metric.page_counts("a b c d e", ""),  # no precision (TP+FP = 0), R 0
        metric.page_counts("", "x y"),  # P 0, no recall (TP+FN = 0)
        metric.page_counts("", ""),  # counts for neither
    ]
    scores = metric.score(pages)
    precision = (1 + 0.5 + 0) / 3
    recall = (1 + 0.5 + 0) / 3
    assert scores.precision == pytest.approx(precision)
    assert scores.recall == pytest.approx(recall)
    assert scores.f1 == pytest.approx(2 * precision * recall / (precision + recall))
    assert scores.pages == 5


def test_every_page_weighs_the_same_whatever_its_length() -> None:
    long_truth = " ".join(f"w{i}" for i in range(1000))
    long_pred = " ".join(f"w{i}" for i in range(500))  # recall about 1/2 on a long page
    pages = [metric.page_counts(long_truth, long_pred), metric.page_counts("a b c d e", "a b c d e")]
    assert metric.score(pages).recall == pytest.approx((497 / 997 + 1) / 2)


def test_page_f1_for_per_page_comparisons() -> None:
    assert metric.page_counts("", "").f1 == 1.0
    assert metric.page_counts("a b c d e", "a b c d x").f1 == pytest.approx(0.5)
    assert metric.page_counts("a b c d e", "").f1 == 0.0


def test_score_predictions_requires_the_same_ids() -> None:
    with pytest.raises(ValueError, match="do not match"):
        metric.score_predictions({"a": "x"}, {"b": "x"})
    result = metric.score_predictions({"a": "p q r s t", "b": "u v"}, {"a": "p q r s t", "b": "u v"})
    assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)


def test_nothing_to_score_is_an_error() -> None:
    with pytest.raises(ValueError):
        metric.score([metric.page_counts("", "")])
