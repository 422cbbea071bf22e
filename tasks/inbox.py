"""The ``find-new-page-sets`` task: the page sets of the inbox that have no up-to-date batch."""

from __future__ import annotations

from prefect import task

from selection_extraction.inbox import InboxScan, prepare_inbox, scan_inbox
from tasks.options import io_task_options


@task(name="find-new-page-sets", **io_task_options())
def find_new_page_sets(inbox: str | None, data_root: str | None) -> InboxScan:
    """Resolve the inbox inside the data root (creating the default one) and sort its page sets.

    Args:
        inbox: The inbox folder; None for ``<data root>/inbox``.
        data_root: The data root; None for ``$CONTENT_SELECTION_DATA_ROOT``.

    Returns:
        The new and up-to-date page sets, the batch-name clashes and the ignored files.

    Raises:
        UnsafePathError: no data root, or an inbox outside it (not retried).
        InvalidPagesError: a named inbox that does not exist (not retried).
    """
    return scan_inbox(prepare_inbox(inbox, data_root))
