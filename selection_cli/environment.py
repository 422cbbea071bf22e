"""The settings of the command line that come from the environment (and only of it).

The core reads no environment: the command line reads these and passes them down.

* ``CONTENT_SELECTION_PURE``: set to anything but ``""`` or ``"0"``, the pure-Python
  path of the rule runs even where the compiled kernel is built (same results,
  slower): ``CONTENT_SELECTION_PURE=1 content-selection select ...``. It applies
  to the command's own process (and processes forked from it).

The data root (``CONTENT_SELECTION_DATA_ROOT``, :mod:`selection_storage.paths`) and
the task runner (``CONTENT_SELECTION_TASK_RUNNER``, :mod:`flows.runners`) are
settings of the stage, read by the layers that use them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import Final

from selection_core import kernel

#: Set it (to ``1``) to run the pure-Python path even where the kernel is built.
PURE_ENV: Final[str] = "CONTENT_SELECTION_PURE"


def apply_kernel_setting(environ: Mapping[str, str] | None = None) -> bool:
    """Turn the compiled kernel off when ``CONTENT_SELECTION_PURE`` asks for it; whether it is in use.

    Args:
        environ: The environment to read (default: ``os.environ``).

    >>> apply_kernel_setting({PURE_ENV: "1"})
    False
    >>> apply_kernel_setting({}) == (kernel.BUILT is not None)
    True
    """
    env = os.environ if environ is None else environ
    return kernel.use_kernel(env.get(PURE_ENV, "") in ("", "0"))


def prepare_embedded_api(environ: MutableMapping[str, str] | None = None) -> None:
    """Before Prefect is imported by a command that runs a flow: settings for its embedded API.

    Only when ``PREFECT_API_URL`` is unset (the run then uses Prefect's embedded,
    ephemeral API), and only as defaults the user's own settings override: neither
    the embedded server nor the client may reach the network for telemetry
    (``DO_NOT_TRACK`` also keeps the client's first-run notice off the terminal), and it may wait
    up to 120 s to start, not Prefect's 20 s: a first start on a busy or small
    machine (database migrations) can take longer than that.

    >>> env = {}
    >>> prepare_embedded_api(env)
    >>> env["PREFECT_SERVER_ANALYTICS_ENABLED"], env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"]
    ('false', '120')
    """
    env = os.environ if environ is None else environ
    if not env.get("PREFECT_API_URL"):
        env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        env.setdefault("DO_NOT_TRACK", "1")
        env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
