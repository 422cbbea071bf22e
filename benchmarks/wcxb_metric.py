"""The Web Content Extraction Benchmark's (WCXB) own metric, reimplemented from its README and ``evaluate.py``.

* tokens of a text are the matches of ``\\w+`` (Python ``re``, Unicode) in the lower-cased text;
* per page, the overlap is the size of the multiset intersection of the prediction's and the reference's
  tokens; precision is overlap / prediction tokens, recall overlap / reference tokens, F1 their harmonic mean;
* an empty reference scores 1.0 against an empty prediction and 0.0 otherwise; an empty prediction of a
  non-empty reference scores 0.0;
* a set of pages scores the mean of its pages' precision, recall and F1 (every page weighs the same).

>>> word_scores("The cat sat.", "the cat sat on the mat")
WordScores(precision=1.0, recall=0.5, f1=0.6666666666666666)
>>> mean_scores([word_scores("a b", "a b"), word_scores("", "a b")]).f1
0.5
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

_WORD = re.compile(r"\w+")


class WordScores(NamedTuple):
    """Precision, recall and F1 of one page, or their means over pages."""

    precision: float
    recall: float
    f1: float


def words(text: str) -> list[str]:
    """The benchmark's tokens: runs of word characters of the lower-cased text."""
    return _WORD.findall(text.lower()) if text else []


def word_scores(predicted: str, reference: str) -> WordScores:
    """One page's scores of ``predicted`` against the ground truth ``reference``."""
    pred, ref = words(predicted), words(reference)
    if not ref:
        return WordScores(1.0, 1.0, 1.0) if not pred else WordScores(0.0, 0.0, 0.0)
    if not pred:
        return WordScores(0.0, 0.0, 0.0)
    overlap = sum((Counter(pred) & Counter(ref)).values())
    precision, recall = overlap / len(pred), overlap / len(ref)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return WordScores(precision, recall, f1)


def mean_scores(pages: Sequence[WordScores]) -> WordScores:
    """The mean of each score over ``pages`` (the benchmark's figure for a set of pages); zeros for none."""
    if not pages:
        return WordScores(0.0, 0.0, 0.0)
    n = len(pages)
    return WordScores(
        sum(p.precision for p in pages) / n, sum(p.recall for p in pages) / n, sum(p.f1 for p in pages) / n
    )
