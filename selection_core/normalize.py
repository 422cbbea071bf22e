"""Normalization and tokenization of extractor texts, for comparison only: the eight steps of ``docs/rule.md``."""

from __future__ import annotations

import html
import re
import unicodedata

import ftfy
import ftfy.badness

import selection_core.kernel as kernel

from .tokens import MOJIBAKE_MARKERS, MOJIBAKE_MAX_WIDTH, TOKEN

_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")

# Common non-ASCII separators; each must be neither a letter nor a digit.
_SEPARATORS = "\u2019\u2018\u201c\u201d\u2013\u2014\u2026\u00a0\u2022\u00b7\u00ab\u00bb\u201e\u2032\u00b4"
assert not any(TOKEN.fullmatch(c) for c in _SEPARATORS)


def _maybe_mojibake(text: str) -> bool:
    """True unless ftfy's heuristic certainly finds nothing in ``text`` (then ``fix_encoding`` is the identity)."""
    if MOJIBAKE_MARKERS is None:
        return True
    bad = ftfy.badness.BADNESS_RE
    if kernel.KERNEL is not None:  # the same windows, found in C
        return any(bad.search(text, lo, hi) for lo, hi in kernel.marker_windows(text))
    w = MOJIBAKE_MAX_WIDTH
    # Every match contains a marker at some p and lies within [p - w + 1, p + w); overlapping windows are
    # merged. search(text, pos, endpos) sees only real characters, and '^' still means the real start.
    lo, hi = 0, -1
    for m in MOJIBAKE_MARKERS.finditer(text):
        p = m.start()
        if p - w + 1 <= hi:
            hi = p + w
            continue
        if hi > 0 and bad.search(text, lo, hi):
            return True
        lo, hi = max(p - w + 1, 0), p + w
    return hi > 0 and bad.search(text, lo, hi) is not None


def prepare(text: str) -> str:
    """Steps 1 to 5: the whole-text steps."""
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii() and _maybe_mojibake(text):
        text = ftfy.fix_encoding(text)
    if "[" in text:
        if "!" in text:
            text = _MD_IMAGE.sub(" ", text)
        text = _MD_LINK.sub(r"\1", text)
    if "<" in text:
        text = _HTML_COMMENT.sub(" ", text)
        text = _HTML_TAG.sub(" ", text)
    return text


def nfkc_form(text: str) -> str:
    """Steps 1 to 6 of the rule (``prepare``, then NFKC, line by line): what the compiled kernel takes."""
    text = prepare(text)
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return "\n".join([unicodedata.normalize("NFKC", line) for line in text.split("\n")])


def fold_line(line: str) -> str:
    """Steps 6 and 7 (NFKC, lower) on text without ``\\n``, or on a whole text."""
    if not line.isascii():
        line = unicodedata.normalize("NFKC", line)
    return line.lower()


def tokenize_line(folded: str) -> list[str]:
    """Step 8 on folded text."""
    if not folded.isascii():
        ascii_form = folded
        for sep in _SEPARATORS:
            if sep in ascii_form:
                ascii_form = ascii_form.replace(sep, " ")
        if not ascii_form.isascii():
            return TOKEN.findall(folded)
        folded = ascii_form
    return _ASCII_TOKEN.findall(folded)


def normalize(text: str) -> str:
    """Return the comparison form of ``text`` (steps 1 to 7 of the rule)."""
    return fold_line(prepare(text))


def tokenize(text: str) -> list[str]:
    """Return the tokens of ``text`` after normalization (all eight steps)."""
    return tokenize_line(normalize(text))
