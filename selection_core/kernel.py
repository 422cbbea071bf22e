"""The optional compiled kernel (``_kernel.c``): the C twin of ``text_shingles`` and ``select.py``'s set algebra."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from types import ModuleType

from .config import SHINGLE_SIZE
from .tokens import MOJIBAKE_MARKERS, MOJIBAKE_MAX_WIDTH, TOKEN

CODE_POINTS = 0x110000

#: The fold-table entry of a code point that the kernel cannot lower case on its own.
FOLD_UNKNOWN = 0xFFFFFFFF

# Lowered by str.lower according to the characters around it (final sigma), and what that can become.
_CONTEXTUAL = (0x3A3,)
_CONTEXTUAL_RESULTS = "\u03c3\u03c2"


def check_shingle_size(compiled: ModuleType, size: int = SHINGLE_SIZE) -> None:
    """Raise RuntimeError when the compiled kernel's shingles are not ``size`` tokens long."""
    # One text of size + 1 distinct tokens has exactly 2 shingles of that size.
    fold = bytearray(4 * CODE_POINTS)
    letters = [chr(ord("a") + i) for i in range(size + 1)]
    for c in letters:
        fold[4 * ord(c) : 4 * ord(c) + 4] = ord(c).to_bytes(4, sys.byteorder)
    found = compiled.article_counts((" ".join(letters),), fold, 0)
    if found is None or found[1][1] != 2:
        raise RuntimeError(
            f"selection_core._kernel was built for shingles of another size than config.SHINGLE_SIZE ({size}): "
            "set SHINGLE_SIZE in _kernel.c to the same value and rebuild it (pip install --no-deps -e .)"
        )


#: Code points in a plane: the tables are built one plane at a time, so that building them costs
#: little more memory than the tables themselves.
PLANE = 0x10000


def _plane(plane: int) -> str:
    """One string of the code points of ``plane`` in order, surrogates included."""
    buf = bytearray(4 * PLANE)
    buf[0::4] = bytes(range(256)) * 256
    buf[1::4] = b"".join(bytes([i]) * 256 for i in range(256))
    buf[2::4] = bytes([plane]) * PLANE
    return buf.decode("utf-32-le", "surrogatepass")


def _unknown_code_points(chars: str, base: int) -> list[int]:
    """The code points of ``chars`` (which starts at ``base``) whose ``str.lower`` is not one character decided
    by itself alone."""
    unknown = [cp for cp in _CONTEXTUAL if base <= cp < base + len(chars)]
    step = 4096
    for k in range(0, len(chars), step):
        chunk = chars[k : k + step]
        if len(chunk.lower()) != len(chunk):
            unknown += [base + k + i for i, c in enumerate(chunk) if len(c.lower()) != 1]
    return sorted(set(unknown))


def build_fold_table() -> tuple[bytes, bool]:
    """The kernel's fold table, and whether already lower-cased text may be passed to it.

    Entry ``c`` (native-endian uint32): ``ord(chr(c).lower())`` when that is one character matching
    ``tokens.TOKEN``, 0 when it does not match, ``FOLD_UNKNOWN`` when it cannot be lowered alone (``Σ``, ``İ``).
    """
    encoding = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"
    table = bytearray(4 * CODE_POINTS)
    unknown: list[int] = []
    lowered_ok = True
    for plane in range(CODE_POINTS // PLANE):
        base = plane * PLANE
        simple = _plane(plane)
        here = _unknown_code_points(simple, base)
        for cp in here:
            simple = simple[: cp - base] + " " + simple[cp - base + 1 :]
        lowered = simple.lower()
        if len(lowered) != PLANE:
            raise RuntimeError("str.lower changed the length of text without unknown code points")
        lowered_ok = lowered_ok and lowered.lower() == lowered
        entries = bytearray(lowered.encode(encoding, "surrogatepass"))
        end = 0  # TOKEN is one character class repeated: a character is in a match exactly when it matches alone
        for m in TOKEN.finditer(lowered):
            start = m.start()
            entries[4 * end : 4 * start] = bytes(4 * (start - end))
            end = m.end()
        entries[4 * end :] = bytes(4 * (PLANE - end))
        table[4 * base : 4 * (base + PLANE)] = entries
        unknown += here
    for cp in unknown:
        table[4 * cp : 4 * cp + 4] = FOLD_UNKNOWN.to_bytes(4, sys.byteorder)
    # Lowered text takes the same table when lowering is idempotent on all it produces.
    produced = "".join(chr(cp).lower() for cp in unknown) + _CONTEXTUAL_RESULTS
    lowered_ok = lowered_ok and all(ord(c) not in unknown and c.lower() == c for c in produced)
    return bytes(table), lowered_ok


def build_marker_table() -> bytes:
    """One byte per code point: 1 for the mojibake markers of ``tokens.MOJIBAKE_MARKERS`` (one character each)."""
    table = bytearray(CODE_POINTS)
    if MOJIBAKE_MARKERS is not None:
        for plane in range(CODE_POINTS // PLANE):
            for m in MOJIBAKE_MARKERS.finditer(_plane(plane)):
                table[plane * PLANE + m.start()] = 1
    return bytes(table)


try:
    import selection_core._kernel as _built  # type: ignore[import-not-found]
except ImportError:
    _built = None

#: The compiled kernel when it was built, whether it is in use or not.
BUILT: ModuleType | None = _built

#: The compiled kernel in use, or ``None`` when the pure-Python path runs (see :func:`use_kernel`).
KERNEL: ModuleType | None = BUILT


def use_kernel(enabled: bool) -> bool:
    """Use the compiled kernel (when built) or the pure-Python path in this process; whether the kernel is in use."""
    global KERNEL
    KERNEL = BUILT if enabled else None
    return KERNEL is not None


@dataclass
class Tables:
    """The kernel's tables (empty when not built)."""

    fold: bytes
    lowered_ok: bool
    marker: bytes


@functools.cache
def tables() -> Tables:
    """The tables, built on first use (not at import), after :func:`check_shingle_size`."""
    if BUILT is None:
        return Tables(b"", False, b"")
    check_shingle_size(BUILT)
    fold, lowered_ok = build_fold_table()
    return Tables(fold, lowered_ok, build_marker_table())


# Only the speed of the kernel's hash tables depends on the seed, never a result.
_SEED = hash("selection_core.kernel") & (2**64 - 1)


def article_counts(texts: tuple[str | None, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Token counts and shingle-set Venn regions of texts in ``normalize.nfkc_form`` (``None``: no text).

    ``regions[m]``: the distinct shingles in exactly the texts whose bits are set in ``m``. ``None`` when the
    kernel cannot take the article. Raises RuntimeError when the kernel is not in use.
    """
    if KERNEL is None:
        raise RuntimeError("the compiled kernel is not in use")
    t = tables()
    found = KERNEL.article_counts(texts, t.fold, _SEED)
    if found is None and t.lowered_ok:
        # A code point the table cannot lower (Σ, İ): Python lowers, the kernel tokenizes.
        found = KERNEL.article_counts(tuple(None if x is None else x.lower() for x in texts), t.fold, _SEED)
    return found  # type: ignore[no-any-return]


def marker_windows(text: str) -> list[tuple[int, int]]:
    """The merged windows ``[p - W + 1, p + W)`` (from 0) around every mojibake marker at ``p``, in order
    (``W = tokens.MOJIBAKE_MAX_WIDTH``). Raises RuntimeError when the kernel is not in use."""
    if KERNEL is None:
        raise RuntimeError("the compiled kernel is not in use")
    return KERNEL.marker_windows(text, tables().marker, MOJIBAKE_MAX_WIDTH)  # type: ignore[no-any-return]
