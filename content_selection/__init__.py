"""What your own code imports from content-selection, under a name no project of yours shadows.

An upstream flow tells the stage that a batch is ready with :func:`emit_batch_extracted`::

    from content_selection import emit_batch_extracted
"""

from __future__ import annotations

from content_selection.events import BATCH_EXTRACTED_EVENT, BATCH_PATH_LABEL, emit_batch_extracted

__all__ = ["BATCH_EXTRACTED_EVENT", "BATCH_PATH_LABEL", "emit_batch_extracted"]
