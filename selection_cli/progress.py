"""The progress bar the commands draw on a terminal."""

from __future__ import annotations

from typing import Final, TextIO

from selection_core.progress import PercentProgress

PROGRESS_MIN_ARTICLES: Final[int] = 1000


class ProgressBar:
    """``bar(done, total)``: ``\\r<label> [###---] done/total [unit]`` on a terminal stream; silent elsewhere.

    It redraws at most once per whole percent. ``width`` 0 draws the counts alone; totals under ``min_total``
    draw nothing.
    """

    def __init__(
        self,
        stream: TextIO,
        label: str = "selecting",
        width: int = 30,
        min_total: int = PROGRESS_MIN_ARTICLES,
        unit: str | None = None,
    ) -> None:
        self.stream = stream
        self.label = label
        self.width = width
        self.min_total = max(min_total, 1)
        self.unit = unit
        self.enabled = stream.isatty()
        self._percent = PercentProgress(self._draw)
        self._done = self._total = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < self.min_total:
            return
        self._done, self._total = done, total
        self._percent(done, total)

    def _draw(self, _percent: int) -> None:
        done, total = self._done, self._total
        line = self.label
        if self.width:
            filled = self.width * done // total
            line += " [" + "#" * filled + "-" * (self.width - filled) + "]"
        line += f" {done}/{total}" + (f" {self.unit}" if self.unit else "")
        self.stream.write("\r" + line + ("\n" if done >= total else ""))
        self.stream.flush()
