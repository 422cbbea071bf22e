"""The terminal's progress bar of the commands, drawn through the one progress reporter.

:class:`ProgressBar` takes ``progress(done, total)`` calls (the shape every long
step reports in) and draws on a terminal stream through
:class:`selection_core.progress.PercentProgress`: at most once per whole percent,
so no clock decides when to redraw. On anything but a terminal, and for totals
under its ``min_total`` (batches under :data:`PROGRESS_MIN_ARTICLES` articles for
``select``), it draws nothing.
"""

from __future__ import annotations

from typing import Final, TextIO

from selection_core.progress import PercentProgress

#: Batches at least this long get a progress bar (on a terminal only).
PROGRESS_MIN_ARTICLES: Final[int] = 1000


class ProgressBar:
    """``bar(done, total)``: ``\\r<label> [###---] done/total [unit]`` on a terminal stream; silent elsewhere.

    Args:
        stream: Where to draw (stderr); nothing is drawn unless it is a terminal.
        label: The word before the bar.
        width: Characters of the bar; 0 for the counts alone.
        min_total: Totals under this draw nothing.
        unit: A word after the counts (``"pages"``), or ``None``.

    >>> import io
    >>> class Terminal(io.StringIO):
    ...     def isatty(self) -> bool:
    ...         return True
    >>> term = Terminal()
    >>> bar = ProgressBar(term, "extracting", width=0, min_total=1, unit="pages")
    >>> for done in range(201):
    ...     bar(done, 200)
    >>> term.getvalue().count("\\r"), term.getvalue().split("\\r")[-1]
    (101, 'extracting 200/200 pages\\n')
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
