"""Normalization and tokenization of extractor texts (for comparison only).

The normalized text is never written anywhere: it only decides which
extractor's original text is selected. The steps and their order are part of
the rule (see the README, "The rule in brief"):

1. ``html.unescape`` once;
2. ``ftfy.fix_encoding`` on the whole text;
3. Markdown images removed (one space);
4. Markdown links replaced by their anchor text;
5. HTML comments and tags replaced by one space;
6. Unicode NFKC;
7. ``str.lower()``;
8. tokens: maximal runs of ``[\\p{L}\\p{N}]`` (letters and digits).

Fast paths skip a step only where the step is provably the identity on the
input (for example ``ftfy.fix_encoding`` returns ASCII text unchanged, and a
text without ``[`` contains no Markdown link); they never change a result.
"""

from __future__ import annotations

import html
import re
import unicodedata

import ftfy
import regex

_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_TOKEN = regex.compile(r"[\p{L}\p{N}]+")
# For ASCII text, \p{L} is [A-Za-z] and \p{N} is [0-9]; after lower() only
# lowercase letters remain. The stdlib engine is faster for this simple class.
_ASCII_TOKEN = re.compile(r"[a-z0-9]+")


def normalize(text: str) -> str:
    """Return the comparison form of ``text`` (steps 1 to 7 of the rule).

    >>> normalize("Caf&eacute; <b>NEWS</b> ![logo](x.png) [read](http://a)")
    'café  news    read'
    """
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii():
        text = ftfy.fix_encoding(text)
    if "[" in text:
        if "!" in text:
            text = _MD_IMAGE.sub(" ", text)
        text = _MD_LINK.sub(r"\1", text)
    if "<" in text:
        text = _HTML_COMMENT.sub(" ", text)
        text = _HTML_TAG.sub(" ", text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return text.lower()


def tokenize(text: str) -> list[str]:
    """Return the tokens of ``text`` after normalization (all eight steps).

    >>> tokenize("Hello, WORLD! It's 2024.")
    ['hello', 'world', 'it', 's', '2024']
    """
    normalized = normalize(text)
    if normalized.isascii():
        return _ASCII_TOKEN.findall(normalized)
    return _TOKEN.findall(normalized)
