"""Which I/O failures a retry may cure: the one errno policy of the project.

The policy is an *allow-list*: an ``OSError`` is transient only when its errno
is one of :data:`TRANSIENT_ERRNOS` (a flaky disk, a network file system that
blinked, an interrupted call). Any other errno, and an ``OSError`` without one,
is taken as permanent, so that a missing file, a refused path or a full disk
fails on the first try and the person who has to fix it hears about it at once.
An allow-list is the safer default: an errno nobody thought of is not retried
(with backoff, for minutes) on the chance that it might go away.

The file engines map ``OSError`` to typed errors with it
(:func:`selection_storage.files.read_error`, :func:`selection_storage.atomic.write_error`),
the extraction engine decides its own retries with it, and the Prefect tasks'
``retry_condition_fn`` asks :func:`is_transient_io_error`.
"""

from __future__ import annotations

import errno
from typing import Final

from selection_core.errors import InvalidBatchError, OutputPathError, SelectionError

#: errno values for which retrying an I/O operation can help (every other errno is permanent).
TRANSIENT_ERRNOS: Final[frozenset[int]] = frozenset(
    e
    for e in (errno.EIO, errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT, getattr(errno, "ESTALE", None))
    if e is not None
)


def is_transient_io_error(exc: BaseException) -> bool:
    """Tell whether another try may succeed where ``exc`` failed.

    Args:
        exc: The exception a task raised.

    Returns:
        True for transient I/O errors (the core's ``ReadError``, a ``WriteError``
        marked transient, or a plain ``OSError`` whose errno is in
        :data:`TRANSIENT_ERRNOS`); False for everything else, and always False for
        ``InvalidBatchError`` and ``OutputPathError``.

    Example:
        >>> import errno
        >>> is_transient_io_error(OSError(errno.EIO, "Input/output error"))
        True
        >>> is_transient_io_error(OSError(errno.ENOENT, "No such file or directory"))
        False
        >>> is_transient_io_error(ValueError("not JSON"))
        False
    """
    if isinstance(exc, (InvalidBatchError, OutputPathError)):
        return False
    if not isinstance(exc, OSError):
        return False
    if isinstance(exc, SelectionError):
        return bool(getattr(exc, "transient", False))
    return exc.errno in TRANSIENT_ERRNOS
