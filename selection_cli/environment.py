"""The settings the command line reads from the environment (the core reads none)."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Final

from selection_core import kernel

#: Set it (to anything but ``""`` or ``"0"``) to run the pure-Python path even where the kernel is built.
PURE_ENV: Final[str] = "CONTENT_SELECTION_PURE"


def apply_kernel_setting(environ: Mapping[str, str] | None = None) -> bool:
    """Turn the compiled kernel off when ``CONTENT_SELECTION_PURE`` asks for it; returns whether it is in use.

    >>> apply_kernel_setting({PURE_ENV: "1"})
    False
    >>> apply_kernel_setting({}) == (kernel.BUILT is not None)
    True
    """
    env = os.environ if environ is None else environ
    return kernel.use_kernel(env.get(PURE_ENV, "") in ("", "0"))


def prepare_embedded_api(environ: MutableMapping[str, str] | None = None) -> None:
    """Before Prefect is imported, without ``PREFECT_API_URL``: defaults for its embedded API (docs/prefect.md).

    >>> env = {}
    >>> prepare_embedded_api(env)
    >>> env["PREFECT_SERVER_ANALYTICS_ENABLED"], env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]
    ('false', '120')
    """
    env = os.environ if environ is None else environ
    if not env.get("PREFECT_API_URL"):
        env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        env.setdefault("DO_NOT_TRACK", "1")  # also keeps the client's first-run notice off the terminal
        env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")  # a first start can take longer
