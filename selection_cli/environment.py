"""The settings the command line reads from the environment (the core reads none)."""

from __future__ import annotations

import os
from typing import Final

from selection_core import kernel
from selection_core.errors import ServiceUnavailableError
from selection_storage.stores import connection_refusal

#: Set it (to anything but ``""`` or ``"0"``) to run the pure-Python path even where the kernel is built.
PURE_ENV: Final[str] = "CONTENT_SELECTION_PURE"
#: Seconds to wait for the Prefect API's host to accept a connection before the run is refused.
API_CONNECT_TIMEOUT: Final[float] = 3.0


def apply_kernel_setting() -> bool:
    """Turn the compiled kernel off when ``CONTENT_SELECTION_PURE`` asks for it; returns whether it is in use."""
    return kernel.use_kernel(os.environ.get(PURE_ENV, "") in ("", "0"))


#: Buffers of this size or more are mapped apart by glibc's allocator, and unmapped when freed.
MMAP_THRESHOLD_BYTES: Final[int] = 1 << 20


def release_large_buffers() -> bool:
    """On glibc, map each buffer of :data:`MMAP_THRESHOLD_BYTES` or more apart, so that it goes back to the system
    when freed (a chunk's bytes, an upload's part, a response's body). Otherwise glibc raises that threshold to the
    largest buffer freed (up to 32 MiB), and the heap keeps the memory of the largest chunks for the whole run
    (figures: docs/scaling.md). Whether it was set (False elsewhere)."""
    import ctypes

    try:
        return bool(ctypes.CDLL(None).mallopt(-3, MMAP_THRESHOLD_BYTES))  # -3: M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # no mallopt (macOS, Windows): its own allocator
        return False


def prepare_embedded_api() -> None:
    """Before Prefect is imported, without ``PREFECT_API_URL``: defaults for its embedded API."""
    env = os.environ
    if not env.get("PREFECT_API_URL"):
        env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        env.setdefault("DO_NOT_TRACK", "1")  # also keeps the client's first-run notice off the terminal
        env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")  # a first start can take longer


def check_prefect_api(embedded_ok: bool = True) -> None:
    """Refuse, before a flow starts, a ``PREFECT_API_URL`` (environment or profile) whose host does not accept a
    connection; ``embedded_ok``: the command can do without it. Imports Prefect's settings.

    Raises:
        ServiceUnavailableError: naming the URL and what to do.
    """
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        return
    reason = connection_refusal(url, API_CONNECT_TIMEOUT)
    if reason is None:
        return
    fix = "unset PREFECT_API_URL to use the embedded API" if embedded_ok else "point PREFECT_API_URL at a running one"
    raise ServiceUnavailableError(
        f"the Prefect API at {url} cannot be reached ({reason}); start the server (prefect server start) or {fix}"
    )
