"""Which failures another try may cure: the one classification of the project, for disks, stores and HTTP servers.

It decides the waits of :func:`~selection_storage.stores.retries.retried` (a store call tried again within the
patience), the ``retry`` hint of an error's line, and which tasks Prefect runs again.
"""

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

#: Failures of a connection and timeouts, by class name (the SDKs' own classes are not imported for this): a store
#: or a web server that did not answer, or stopped answering midway.
CONNECTION_FAILURES: Final[frozenset[str]] = frozenset(
    {
        "TimeoutError",
        "HTTPClientError",
        "ClientConnectionError",
        "ClientPayloadError",
        "FSTimeoutError",
        "IncompleteRead",
        "ServiceResponseError",
    }
)


def is_named(exc: BaseException, names: frozenset[str]) -> bool:
    """Whether ``exc``'s class, or one of its bases, has one of ``names``."""
    return any(t.__name__ in names for t in type(exc).__mro__)


def is_transient(exc: BaseException) -> bool:
    """Whether another try may succeed where ``exc`` failed: a :class:`SelectionError` says so itself (its
    ``transient``); any other error is transient when it is an ``OSError`` whose errno is in
    :data:`TRANSIENT_ERRNOS` or a failed connection (:data:`CONNECTION_FAILURES`), never a missing file or a
    refused permission."""
    if isinstance(exc, SelectionError):
        return bool(getattr(exc, "transient", False))
    if isinstance(exc, PermissionError | FileNotFoundError):
        return False
    if isinstance(exc, OSError) and exc.errno in TRANSIENT_ERRNOS:
        return True
    return is_named(exc, CONNECTION_FAILURES)
