"""The settings the command line reads from the environment (the core reads none)."""

from __future__ import annotations

import os
from typing import Final

from selection_core import kernel

#: Set it (to anything but ``""`` or ``"0"``) to run the pure-Python path even where the kernel is built.
PURE_ENV: Final[str] = "CONTENT_SELECTION_PURE"


def apply_kernel_setting() -> bool:
    """Turn the compiled kernel off when ``CONTENT_SELECTION_PURE`` asks for it; returns whether it is in use."""
    return kernel.use_kernel(os.environ.get(PURE_ENV, "") in ("", "0"))


def prepare_embedded_api() -> None:
    """Before Prefect is imported, without ``PREFECT_API_URL``: defaults for its embedded API."""
    env = os.environ
    if not env.get("PREFECT_API_URL"):
        env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        env.setdefault("DO_NOT_TRACK", "1")  # also keeps the client's first-run notice off the terminal
        env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")  # a first start can take longer
