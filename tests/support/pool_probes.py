"""Module-level functions for the extraction pool's tests (imported by the worker processes)."""

from __future__ import annotations

import os


def report_pid(html: str, url: str | None) -> tuple[str, str | None]:
    """An "extractor" whose text is the pid of the worker that ran it."""
    return str(os.getpid()), None


def failing_initializer() -> None:
    """A worker initializer that cannot get ready."""
    raise OSError("injected: the worker cannot get ready")
