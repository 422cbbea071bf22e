"""One progress reporter for every long step: the terminal's bar and the run's progress artifact.

Long steps (scoring a batch, extracting pages) call ``progress(done, total)``
after each item. :class:`PercentProgress` turns those calls into at most one call
of its *sink* per whole percent, so a sink that draws a bar or updates a
Prefect artifact costs a bounded number of updates (at most 101), whatever the
size of the batch. It reads no clock: the same calls give the same updates.

>>> seen = []
>>> progress = PercentProgress(seen.append)
>>> for done in range(0, 401):
...     progress(done, 400)
>>> len(seen), seen[:3], seen[-1]
(101, [0, 1, 2], 100)
"""

from __future__ import annotations

from collections.abc import Callable


class PercentProgress:
    """``progress(done, total)`` -> ``sink(percent)``, once per new whole percent.

    Args:
        sink: Called with the percentage done (0 to 100), each value at most once,
            in increasing order. A sink that raises is the caller's business.
    """

    def __init__(self, sink: Callable[[int], object]) -> None:
        self._sink = sink
        self._last = -1

    @property
    def percent(self) -> int:
        """The last percentage passed to the sink (-1 before the first)."""
        return self._last

    def __call__(self, done: int, total: int) -> None:
        percent = 100 if total <= 0 else min(100, (100 * done) // total)
        if percent <= self._last:
            return
        self._last = percent
        self._sink(percent)
