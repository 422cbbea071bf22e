"""A stand-in for the upstream extraction flow, showing the trigger contract.

The real extraction flow writes a ``*_extracted.json`` batch, then announces it
with :func:`content_selection.emit_batch_extracted`. The ``select-content/triggered``
deployment (served by ``content-selection serve`` or deployed from
``prefect.yaml``) starts a selection run on that file.

Run it against a server (``PREFECT_API_URL`` set)::

    python examples/upstream_flow.py SOURCE_BATCH.json /data/batches/today_extracted.json

It copies SOURCE_BATCH.json to the target (atomically, as an extraction flow
would write its batch) and emits the event.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from prefect import flow, task

from content_selection import emit_batch_extracted


@task(retries=3, retry_delay_seconds=10)
def announce(path: Path) -> None:
    """Emit the event; a server that did not confirm it fails the task, and its retries emit it again."""
    emit_batch_extracted(path)


@flow(name="extract-articles-standin")
def extract_articles(source: str, target: str) -> str:
    """Write a batch (here: copy ``source``) to ``target``, then announce it.

    Args:
        source: An existing batch to stand in for real extraction output.
        target: Where the batch is written; should end with ``_extracted.json``.
    """
    target_path = Path(target)
    fd, tmp = tempfile.mkstemp(dir=target_path.parent, suffix=".tmp")
    os.close(fd)
    shutil.copyfile(source, tmp)
    os.replace(tmp, target_path)  # the batch is complete before anyone hears of it
    announce(target_path)  # <- the whole contract, on the upstream side
    return str(target_path)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python examples/upstream_flow.py SOURCE_BATCH.json TARGET_extracted.json")
    print(extract_articles(sys.argv[1], sys.argv[2]))
