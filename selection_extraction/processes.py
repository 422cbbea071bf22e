"""Worker processes on this machine: the cores this process may use, and the one fork server every pool of worker
processes (the extractors' pebble pool, the ``process`` task runner's executor) starts its workers from."""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from typing import Any

# A worker runs a `python -m` program's module again as its __main__, which the fork server already imported
# (preloaded, so that workers start fast): runpy's warning that it is "found in sys.modules" is true and harmless
# there. The workers inherit this filter from the server, which imports this module first.
warnings.filterwarnings("ignore", r"'.*' found in sys\.modules after import of package", RuntimeWarning)

#: Every module a caller of :func:`forkserver_context` asked the server to import, in the order asked.
_preload: list[str] = []


def available_cores() -> int:
    """The cores this process may run on: its affinity (a cpuset-limited container's share, not the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def forkserver_context(*preload: str) -> Any:
    """The context of worker processes that start in a fraction of a second: forks of this process's one fork
    server (safe from the flow's threads, unlike fork); spawn where there is no fork server.

    The server, started by the first pool, imports once what every call so far asked for: ``__main__`` (a
    ``python -m`` program, as a deployment's flow run is, is imported again as each worker's ``__main__`` unless
    the server has it), ``preload``, and this module (its warnings filter). A module asked for after it started is
    imported by each worker instead."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    main = getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", None)
    for module in (__name__, "__main__", *([main] if main else []), *preload):
        if module not in _preload:
            _preload.append(module)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(_preload))  # read when the server starts
    return context
