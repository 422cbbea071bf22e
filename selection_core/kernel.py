"""The optional compiled kernel: tokens, shingles and set sizes of one article in C.

``selection_core._kernel`` (``_kernel.c``) is built when the package is
installed, if a C compiler is there (the install succeeds without one). From the
texts of one article after steps 1 to 7 of the rule (``normalize``), it counts
the tokens of each (step 8) and the sizes of the regions of the Venn diagram of
their shingle sets (step 2): every size the rule needs (shingle counts, the
consensus, the overlaps) is a sum of those regions. It computes exactly what
``text_shingles`` and the set algebra of ``select.py`` compute, which stay the
reference and the fallback; ``tests/test_kernel.py`` checks the two agree.

The kernel's tokenizer reads a table of the code points that match
``[\\p{L}\\p{N}]``, built here once, at import, by the very ``regex`` pattern
that ``normalize.tokenize_line`` uses, so the two cannot disagree.

The pure-Python path is used when the kernel was not built, or when the
environment variable ``CONTENT_SELECTION_PURE`` is set to anything but ``""`` or
``"0"`` (read once, when this module is imported).
"""

from __future__ import annotations

import os
from types import ModuleType

from .normalize import _TOKEN

#: Set it (to ``1``) to run the pure-Python path even where the kernel is built.
PURE_ENV = "CONTENT_SELECTION_PURE"

#: Code points are 0 .. 0x10FFFF.
CODE_POINTS = 0x110000


def _load() -> ModuleType | None:
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    try:
        from . import _kernel  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _kernel


def _all_code_points() -> str:
    """One string of every code point in order, surrogates included (built as UTF-32)."""
    n = CODE_POINTS
    buf = bytearray(4 * n)
    buf[0::4] = bytes(range(256)) * (n // 256)
    buf[1::4] = b"".join(bytes([i]) * 256 for i in range(256)) * (n // 65536)
    buf[2::4] = b"".join(bytes([plane]) * 65536 for plane in range(n // 65536))
    return buf.decode("utf-32-le", "surrogatepass")


def build_token_table() -> bytes:
    """One byte per code point: 1 where ``normalize._TOKEN`` matches it, else 0.

    The pattern is one character class repeated, so a code point belongs to a
    match in the string of all code points exactly when it matches alone.

    >>> table = build_token_table()
    >>> table[ord("a")], table[ord("7")], table[ord("-")], table[ord("\\u00e9")]
    (1, 1, 0, 1)
    """
    table = bytearray(CODE_POINTS)
    for m in _TOKEN.finditer(_all_code_points()):
        start, end = m.span()
        table[start:end] = b"\x01" * (end - start)
    return bytes(table)


#: The compiled kernel, or ``None`` when the pure-Python path runs.
KERNEL: ModuleType | None = _load()

#: The table the kernel's tokenizer reads (empty when the kernel is not used).
TOKEN_TABLE: bytes = build_token_table() if KERNEL is not None else b""

# Only the speed of the kernel's hash tables on adversarial text depends on the
# seed, never a result; varying it per process (as Python varies str hashes)
# keeps an input from being crafted against one fixed value.
_SEED = hash("selection_core.kernel") & (2**64 - 1)


def article_counts(texts: tuple[str | None, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Token counts and shingle-set Venn regions of folded texts (``None``: no text).

    ``regions[m]`` is the number of distinct shingles found in exactly the texts
    whose bits are set in ``m`` (bit ``i`` for ``texts[i]``).

    Raises:
        RuntimeError: when the kernel is not in use (check ``KERNEL`` first).
        OverflowError: when an article has more distinct tokens than the kernel
            can number (about 4e9); the pure-Python path can still take it.

    >>> if KERNEL is not None:
    ...     counts, regions = article_counts(("a b c d e f", "b c d e f", None))
    ...     assert counts == (6, 5, 0) and regions == (0, 1, 0, 1, 0, 0, 0, 0)
    """
    if KERNEL is None:
        raise RuntimeError("the compiled kernel is not in use")
    counts, regions = KERNEL.article_counts(texts, TOKEN_TABLE, _SEED)
    return counts, regions
