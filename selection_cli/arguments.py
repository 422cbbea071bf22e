"""Argument types the subcommands share: one wording for each refusal."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(minimum: int, too_small: str) -> Callable[[str], int]:
    """An ``argparse`` type: a whole number of at least ``minimum``; ``too_small`` may use ``{text}``, ``{value}``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(too_small.format(text=text, value=value))
        return value

    return parse
