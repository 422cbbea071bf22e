"""The named constants of the selection rule, in one place."""

from __future__ import annotations

from fractions import Fraction
from typing import Final

#: The three extractors, in the fixed order used for explanations and counts.
EXTRACTORS: Final[tuple[str, ...]] = ("trafilatura", "newspaper4k", "readability")

#: The only field compared for each extractor's block.
TEXT_FIELDS: Final[dict[str, str]] = {
    "trafilatura": "text",
    "newspaper4k": "text",
    "readability": "cleaned_text",
}

#: The field of a block that reports an extractor's error (see ``select.error_present``).
ERROR_FIELD: Final[str] = "error"

#: Tie-break priority, best first.
PRIORITY: Final[tuple[str, ...]] = ("newspaper4k", "readability", "trafilatura")

#: Selected when no candidate has any text at all.
FALLBACK: Final[str] = "newspaper4k"

#: Tokens per shingle.
SHINGLE_SIZE: Final[int] = 5

#: Candidates whose score is within this margin of the top score (inclusive) tie.
TIE_MARGIN: Final[Fraction] = Fraction(3, 100)

#: Shingles present in at least this many active candidates form the consensus.
CONSENSUS_MIN_VOTES: Final[int] = 2

#: The key written into every article.
SELECTED_KEY: Final[str] = "selected_extractor"

#: Decimal places of the informational float copies of exact scores.
FLOAT_DIGITS: Final[int] = 6
