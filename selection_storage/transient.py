"""Which I/O failures a retry may cure: an allow-list of errnos, the one policy of the project."""

from __future__ import annotations

import errno
from typing import Final

from selection_core.errors import SelectionError

#: errno values for which retrying an I/O operation can help (every other errno is permanent). An object store's
#: throttling (S3's SlowDown, 503) is EBUSY and its internal errors (500) EREMOTEIO, as s3fs translates them.
TRANSIENT_ERRNOS: Final[frozenset[int]] = frozenset(
    e
    for e in (
        *(errno.EIO, errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT),
        *(getattr(errno, "ESTALE", None), getattr(errno, "EREMOTEIO", None)),
    )
    if e is not None
)


def is_transient_io_error(exc: BaseException) -> bool:
    """Whether another try may succeed where ``exc`` failed: a transient ``SelectionError``, or an ``OSError``
    whose errno is in :data:`TRANSIENT_ERRNOS`."""
    if not isinstance(exc, OSError):  # InvalidBatchError and OutputPathError among them
        return False
    if isinstance(exc, SelectionError):
        return exc.transient
    return exc.errno in TRANSIENT_ERRNOS
