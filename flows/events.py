"""The event contract under its earlier import path, ``flows.events``.

The contract lives in :mod:`content_selection.events`; import it from there
(``from content_selection import emit_batch_extracted``): a project with a
``flows`` package of its own shadows this module. It stays so that code written
for earlier releases keeps working where nothing shadows it.
"""

from __future__ import annotations

from content_selection.events import *  # noqa: F403 - the whole contract, under its earlier name
from content_selection.events import __all__ as __all__
