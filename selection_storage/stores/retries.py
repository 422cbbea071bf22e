"""Store calls tried again after a transient failure (throttling, a 5xx, a reset connection, a timeout), with
exponential backoff and jitter, for as long as the calling context's patience allows.

The patience is none unless a caller sets it (:func:`patience`): a command on one batch fails at once and its line
says to retry. A crawl sets it in its coordinator and in each WARC's process, so that a store that throttles or
restarts for a minute costs that minute, not a WARC. Only the waits are random: what a call returns is the
store's.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import time
from collections.abc import Callable, Iterator
from typing import Final, TypeVar

from selection_storage.transient import is_transient

T = TypeVar("T")

#: The first wait, and the longest, between two tries (each drawn between half of it and all of it): never less
#: than a second, as Common Crawl asks of the clients of its HTTPS service.
FIRST_WAIT_SECONDS: Final[float] = 2.0
MAX_WAIT_SECONDS: Final[float] = 20.0

_patience: contextvars.ContextVar[float] = contextvars.ContextVar("content_selection_store_patience", default=0.0)
_jitter = random.Random()  # noqa: S311 - spreads the waits of many workers; decides nothing


@contextlib.contextmanager
def patience(seconds: float) -> Iterator[None]:
    """Store calls made in this context (this thread) are tried again for up to ``seconds`` after a transient
    failure."""
    token = _patience.set(seconds)
    try:
        yield
    finally:
        _patience.reset(token)


def retried(call: Callable[[], T], within: float | None = None) -> T:
    """``call()``, tried again while it raises a transient error (:func:`~selection_storage.transient.is_transient`)
    and the patience lasts (``within`` seconds, else the calling context's :func:`patience`); then its error."""
    budget = _patience.get() if within is None else within
    if budget <= 0:
        return call()
    deadline = time.monotonic() + budget
    wait = FIRST_WAIT_SECONDS
    while True:
        try:
            return call()
        except Exception as exc:
            pause = _jitter.uniform(wait / 2, wait)
            if not is_transient(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        wait = min(2 * wait, MAX_WAIT_SECONDS)
