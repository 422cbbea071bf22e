"""A store's failures as the project's typed, one-line errors (never naming the storage options)."""

from __future__ import annotations

import errno
from typing import Final

from selection_core.errors import (
    InvalidBatchError,
    OutputPathError,
    ReadError,
    SelectionError,
    ServiceUnavailableError,
    WriteError,
)
from selection_storage.files import InputChangedError
from selection_storage.stores.http import TRANSIENT_STATUSES
from selection_storage.stores.urls import ObjectPath
from selection_storage.transient import is_named, is_transient

#: Failures to reach a store's endpoint (refused, no such host, closed before a response), and other failures of
#: the connection, by class name (the SDKs' own classes are not imported for this).
_UNREACHABLE: Final[frozenset[str]] = frozenset(
    {
        "ConnectionError",
        "ConnectionClosedError",
        "ClientConnectorError",
        "ServerDisconnectedError",
        "ServiceRequestError",
    }
)


def _status(exc: BaseException) -> int | None:
    """The HTTP status of an answer: an Azure SDK error's (adlfs passes it on as it is), or a web server's (aiohttp's
    error, or :class:`HTTPStatusError`); None for any other error."""
    if is_named(exc, frozenset({"HttpResponseError"})):
        return getattr(exc, "status_code", None)
    if is_named(exc, frozenset({"ClientResponseError", "HTTPStatusError"})):
        return getattr(exc, "status", None)
    return None


def store_error(p: ObjectPath, exc: BaseException, writing: bool = False) -> SelectionError:
    """The typed, one-line error for a failure of the store at ``p`` (never naming the storage options)."""
    if isinstance(exc, SelectionError):
        return exc
    kind = OutputPathError if writing else InvalidBatchError
    status = _status(exc)
    if (
        type(exc).__name__ == "FileExpired"
        or status == 412
        or (isinstance(exc, OSError) and "pre-condition" in str(exc).lower())
    ):
        return InputChangedError(f"{p}: the object changed while it was being read; run again once it is complete")
    if not p.backend.writable and (status is not None or isinstance(exc, FileNotFoundError)):  # a web server
        status = status or 404  # its HEAD said there is no such file
        if status in TRANSIENT_STATUSES:
            return ReadError(f"{p}: the server answered {status}; retry later", errno.EBUSY)
        return InvalidBatchError(f"{p}: the server answered {status}; check the URL")
    if isinstance(exc, FileNotFoundError) or _status(exc) == 404:
        what = "the bucket does not exist" if writing else "no such object (or bucket)"
        return kind(f"{p}: {what}; check the URL")
    if isinstance(exc, PermissionError) or _status(exc) in (401, 403):
        return kind(
            f"{p}: access denied by the store; check its credentials (environment, profile, instance role "
            "or storage options) and their permissions"
        )
    if type(exc).__name__ in ("NoCredentialsError", "PartialCredentialsError"):
        return kind(
            f"{p}: no credentials for the store were found; set them in the environment, a profile or the "
            "storage options (a flow run: a Prefect Secret block named by credentials_block)"
        )
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    if is_named(exc, frozenset({"ClientConnectorCertificateError", "SSLCertVerificationError"})):
        refused = ServiceUnavailableError(
            f"{p}: the server's certificate is not trusted ({reason}); give its CA's certificate in SSL_CERT_FILE, "
            "or check the URL"
        )
        refused.transient = False  # no try will trust it
        return refused
    if is_named(exc, _UNREACHABLE):
        return ServiceUnavailableError(
            f"{p}: the store cannot be reached ({reason}); {'nothing was written; ' if writing else ''}"
            f"check its endpoint ({p.backend.endpoint_setting}) and the network, then run again"
        )
    if is_transient(exc):
        if writing:
            return WriteError(
                f"{p}: the store failed ({reason}); nothing was written, retry", getattr(exc, "errno", None), True
            )
        return ReadError(f"{p}: the store failed ({reason}); retry later", getattr(exc, "errno", None))
    if writing:
        return WriteError(f"{p}: the store refused the upload ({reason}); nothing was written")
    return InvalidBatchError(f"{p}: the store refused the read ({reason}); check the URL and the storage options")
