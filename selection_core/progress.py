"""One progress reporter for every long step: at most one call of its sink per whole percent, no clock."""

from __future__ import annotations

from collections.abc import Callable


class PercentProgress:
    """``progress(done, total)`` -> ``sink(percent)`` (0 to 100), once per new whole percent, increasing."""

    def __init__(self, sink: Callable[[int], object]) -> None:
        self._sink = sink
        self._last = -1

    def __call__(self, done: int, total: int) -> None:
        percent = 100 if total <= 0 else min(100, (100 * done) // total)
        if percent <= self._last:
            return
        self._last = percent
        self._sink(percent)
