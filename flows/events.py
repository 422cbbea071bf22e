"""The event contract under its earlier import path; import it from :mod:`content_selection.events` instead."""

from __future__ import annotations

from content_selection.events import *  # noqa: F403 - the whole contract, under its earlier name
from content_selection.events import __all__ as __all__
