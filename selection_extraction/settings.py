"""How a run extracts: the time limit, the page size limit and the workers (:class:`ExtractionSettings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Default seconds one extractor may spend on one page.
DEFAULT_TIME_LIMIT_SECONDS: Final[float] = 60.0

#: Default largest page (after decompression) that is read.
DEFAULT_MAX_PAGE_BYTES: Final[int] = 64 * 1024 * 1024


class PageTooLargeError(ValueError):
    """A page is larger than the configured maximum (after decompression)."""

    @classmethod
    def over(cls, max_bytes: int, detail: str = "") -> PageTooLargeError:
        """The error of a page over ``max_bytes``, with what to do (``detail``: when it was found)."""
        return cls(f"larger than {max_bytes} bytes{detail}; raise max_page_bytes to extract it")


#: Pages' worth of calls a worker makes before it is replaced.
DEFAULT_RECYCLE_AFTER: Final[int] = 500


@dataclass(frozen=True)
class ExtractionSettings:
    """How a run extracts; only ``time_limit_seconds`` and ``max_page_bytes`` can change the batch, which records them.

    ``workers`` None is one per available core; ``keep_workers`` keeps the workers for the next run in this process.
    """

    time_limit_seconds: float = DEFAULT_TIME_LIMIT_SECONDS
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    workers: int | None = None
    recycle_after: int = DEFAULT_RECYCLE_AFTER
    keep_workers: bool = False

    def __post_init__(self) -> None:
        if not self.time_limit_seconds > 0:
            raise ValueError("time_limit_seconds must be positive")
        if self.max_page_bytes < 1:
            raise ValueError("max_page_bytes must be at least 1")
        if self.workers is not None and self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.recycle_after < 1:
            raise ValueError("recycle_after must be at least 1")
