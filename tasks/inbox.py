"""The ``find-new-page-sets`` task: the page sets of the inbox that have no up-to-date batch."""

from __future__ import annotations

from prefect import task

from selection_extraction.inbox import InboxScan, prepare_inbox, scan_inbox
from tasks.options import io_task_options


@task(name="find-new-page-sets", **io_task_options())
def find_new_page_sets(inbox: str | None, data_root: str | None) -> InboxScan:
    """Resolve the inbox (None: ``<data root>/inbox``, created) inside the data root and sort its page sets.

    Raises:
        UnsafePathError: no data root, or an inbox outside it (not retried).
        InvalidPagesError: a named inbox that does not exist (not retried).
    """
    return scan_inbox(prepare_inbox(inbox, data_root))
