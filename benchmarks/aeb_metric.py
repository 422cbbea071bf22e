"""The ScrapingHub article-extraction benchmark's own metric, reimplemented.

As described in the dataset's README (and in the benchmark's ``evaluate.py``):

* tokens of a text are the matches of ``\\w+`` (Python ``re``, Unicode), taken
  from the raw text: no lower-casing, no normalization;
* a text's shingles are the *multiset* of its 4-token windows; a text of 1 to 3
  tokens is one shorter shingle (all its tokens); an empty text has none;
* per page, TP is the sum over shingles of min(truth count, prediction count),
  FP the prediction's excess, FN the truth's excess; the three are then divided
  by their sum, so every page weighs the same;
* precision is the mean, over the pages with TP + FP > 0, of TP / (TP + FP),
  with 1.0 where FP = FN = 0 and 0.0 where TP = FP = 0; recall likewise over
  the pages with TP + FN > 0; F1 = 2PR / (P + R) of the two means.

The float operations are the benchmark's, in its order, so the figures are the
ones its script prints (the bootstrap confidence intervals are left out).

>>> m = page_counts("the cat sat on the mat", "the cat sat on the mat")
>>> m
PageCounts(tp=1.0, fp=0.0, fn=0.0)
>>> score([m]).f1
1.0
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

#: Tokens per shingle.
NGRAM: Final[int] = 4

_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class PageCounts:
    """TP, FP and FN of one page, normalized to sum to 1 (or all 0 for two empty texts)."""

    tp: float
    fp: float
    fn: float

    @property
    def precision(self) -> float | None:
        """This page's precision, or None where the page does not count (TP + FP = 0)."""
        return _precision(self) if self.tp + self.fp > 0 else None

    @property
    def recall(self) -> float | None:
        """This page's recall, or None where the page does not count (TP + FN = 0)."""
        return _recall(self) if self.tp + self.fn > 0 else None

    @property
    def f1(self) -> float:
        """This page's own F1 (for per-page comparisons; not part of the benchmark's figures).

        1.0 when nothing is missing and nothing is extra (two empty texts included).
        """
        if self.fp == self.fn == 0:
            return 1.0
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn)


@dataclass(frozen=True)
class Scores:
    """The benchmark's three figures over a set of pages."""

    precision: float
    recall: float
    f1: float
    pages: int

    def to_dict(self) -> dict[str, float | int]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "pages": self.pages}


def tokenize(text: str | None) -> list[str]:
    """``\\w+`` tokens of the raw text.

    >>> tokenize("Don't stop-me now!")
    ['Don', 't', 'stop', 'me', 'now']
    """
    return _TOKEN.findall(text or "")


def shingles(text: str | None, n: int = NGRAM) -> Counter[tuple[str, ...]]:
    """The multiset of ``n``-token shingles of ``text``.

    >>> sorted(shingles("a b c d e").items())
    [(('a', 'b', 'c', 'd'), 1), (('b', 'c', 'd', 'e'), 1)]
    >>> shingles("a b")
    Counter({('a', 'b'): 1})
    >>> shingles("")
    Counter()
    """
    tokens = tokenize(text)
    if not tokens:
        return Counter()
    if len(tokens) < n:
        return Counter([tuple(tokens)])
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def page_counts(truth: str | None, prediction: str | None) -> PageCounts:
    """Normalized TP, FP, FN of one prediction against its ground truth."""
    true_sh = shingles(truth)
    pred_sh = shingles(prediction)
    tp = fp = fn = 0.0
    for key in true_sh.keys() | pred_sh.keys():
        t, p = true_sh.get(key, 0), pred_sh.get(key, 0)
        tp += min(t, p)
        fp += max(0, p - t)
        fn += max(0, t - p)
    total = tp + fp + fn
    if total > 0:
        tp, fp, fn = tp / total, fp / total, fn / total
    return PageCounts(tp, fp, fn)


def _precision(c: PageCounts) -> float:
    if c.fp == c.fn == 0:
        return 1.0
    if c.tp == c.fp == 0:
        return 0.0
    return c.tp / (c.tp + c.fp)


def _recall(c: PageCounts) -> float:
    if c.fp == c.fn == 0:
        return 1.0
    if c.tp == c.fn == 0:
        return 0.0
    return c.tp / (c.tp + c.fn)


def score(pages: Iterable[PageCounts]) -> Scores:
    """Precision, recall and F1 over pages, as the benchmark computes them.

    Raises:
        ValueError: no page counts for precision or for recall (nothing to average).
    """
    counts = list(pages)
    precisions = [_precision(c) for c in counts if c.tp + c.fp > 0]
    recalls = [_recall(c) for c in counts if c.tp + c.fn > 0]
    if not precisions or not recalls:
        raise ValueError("no page with a prediction or a ground truth to score")
    p = statistics.mean(precisions)
    r = statistics.mean(recalls)
    f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return Scores(p, r, f1, len(counts))


def score_predictions(truth: Mapping[str, str], predictions: Mapping[str, str | None]) -> Scores:
    """Score ``{page id: predicted text}`` against ``{page id: true text}``.

    Raises:
        ValueError: the two mappings do not have the same page ids (as the benchmark requires).
    """
    if truth.keys() != predictions.keys():
        missing = sorted(truth.keys() - predictions.keys())[:3]
        extra = sorted(predictions.keys() - truth.keys())[:3]
        raise ValueError(f"prediction ids do not match the ground truth (missing {missing}, extra {extra})")
    return score(page_counts(truth[k], predictions[k]) for k in sorted(truth))
