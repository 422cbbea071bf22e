"""The one classification of which failures a retry may cure (:mod:`selection_storage.transient`)."""

from __future__ import annotations

import errno

import pytest

from selection_core.errors import (
    InvalidBatchError,
    OutputPathError,
    ReadError,
    ServiceUnavailableError,
    UnsafePathError,
    WriteError,
)
from selection_storage.transient import is_transient

#: A library's timeout class, as aiohttp's ``ServerTimeoutError`` derives from ``TimeoutError``.
ConnectionTimeoutError = type("TimeoutError", (Exception,), {})

# --- retry classification ---------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        pytest.param(OSError(errno.EIO, "Input/output error"), True, id="plain-EIO"),
        pytest.param(OSError(errno.EAGAIN, "Try again"), True, id="plain-EAGAIN"),
        pytest.param(TimeoutError(errno.ETIMEDOUT, "timed out"), True, id="plain-ETIMEDOUT"),
        pytest.param(ReadError("x: read failed", errno.EIO), True, id="core-ReadError"),
        pytest.param(WriteError("x: write failed", errno.EIO, transient=True), True, id="core-WriteError-transient"),
        pytest.param(WriteError("x: no space", errno.ENOSPC), False, id="core-WriteError-ENOSPC"),
        pytest.param(FileNotFoundError(errno.ENOENT, "missing"), False, id="plain-ENOENT"),
        pytest.param(PermissionError(errno.EACCES, "denied"), False, id="plain-EACCES"),
        pytest.param(InvalidBatchError("x: not JSON"), False, id="InvalidBatchError"),
        pytest.param(OutputPathError("x: is the input"), False, id="OutputPathError"),
        pytest.param(UnsafePathError("x: outside"), False, id="UnsafePathError"),
        pytest.param(ValueError("boom"), False, id="ValueError"),
        pytest.param(RuntimeError("boom"), False, id="RuntimeError"),
        pytest.param(ServiceUnavailableError("x: cannot be reached"), True, id="core-ServiceUnavailableError"),
        pytest.param(type("ClientPayloadError", (Exception,), {})("cut"), True, id="a-connection-cut-by-its-name"),
        pytest.param(type("ServerTimeoutError", (ConnectionTimeoutError,), {})("slow"), True, id="a-subclass-of-one"),
        pytest.param(ConnectionResetError(errno.ECONNRESET, "reset"), False, id="plain-ECONNRESET-not-by-name"),
    ],
)
def test_only_transient_io_errors_are_retried(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient
